# source: https://github.com/pytorch/pytorch/issues/128497
# family: a CUDA tensor handed to a forked child (a DataLoader worker)
# symptom: a Dataset whose __init__ keeps a CUDA tensor (class weights), iterated with num_workers=1:
#   after the first batch the main process prints the weights as all zeros
# hazard: the DataLoader with a worker, given a dataset that holds a CUDA tensor
# runs-on-cpu: no (CUDA-only: static only)
import torch
from torch.utils.data import Dataset


class dataset(Dataset):
    def __init__(self):
        self.class_weights = torch.tensor([0.8373, 0.918, 0.866, 1.0345, 1.0166, 0.9969, 0.9754, 1.0489,
                                           0.8786, 1.0023, 0.9539, 0.9843, 1.1116, 0.9037]).cuda()

    def __getitem__(self, index):
        return index

    def __len__(self):
        return 10


def main():
    datasets = dataset()
    trainloader = torch.utils.data.DataLoader(  # hazard: GML203
        datasets,
        batch_size=2,
        shuffle=True,
        num_workers=1,
        pin_memory=True,
        drop_last=True,
    )
    print(trainloader.dataset.class_weights)
    for _ in trainloader:
        print(trainloader.dataset.class_weights)


if __name__ == "__main__":
    main()
