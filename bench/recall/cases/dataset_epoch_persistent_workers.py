# source: https://github.com/pytorch/pytorch/issues/97326
# family: tensors crossing processes (DataLoader workers keep their own copy of the dataset)
# symptom: with persistent_workers=True the dataset's `epoch` attribute, updated while training,
#   stays at its initial value in the workers
# hazard: the attribute update on the dataset after the persistent workers have started
# runs-on-cpu: yes
# printed (torch 2.13): epoch 0: workers saw {0}; epoch 1: workers saw {0}; epoch 2: workers saw {0}
import torch
from torch.utils.data import DataLoader, Dataset


class CustomDataset(Dataset):
    def __init__(self):
        self.data = list(range(8))
        self.epoch = 0

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return torch.tensor([self.data[index], self.epoch])


def main():
    train_set = CustomDataset()
    loader = DataLoader(train_set, batch_size=4, num_workers=2, persistent_workers=True)
    for epoch in range(3):
        train_set.epoch = epoch  # hazard: GML210
        seen = set()
        for batch in loader:
            seen.update(batch[:, 1].tolist())
        print(f"epoch {epoch}: workers saw {seen}")


if __name__ == "__main__":
    main()
