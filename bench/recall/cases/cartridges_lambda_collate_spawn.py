# source: https://github.com/HazyResearch/cartridges/issues/20
# family: tensors crossing processes (spawned DataLoader workers pickle the collate_fn)
# symptom: DataLoader(collate_fn=lambda x: x[0], num_workers=1) built inside train() works under fork
#   (Linux) and dies under spawn (Windows, macOS) with "Can't get local object 'train.<locals>.<lambda>'"
# hazard: the lambda collate_fn handed to a DataLoader with workers
# runs-on-cpu: yes (under fork it passes; run with the spawn start method to see the crash)
# printed (torch 2.13, spawn): AttributeError: Can't pickle local object 'train.<locals>.<lambda>'
import torch
from torch.utils.data import DataLoader, Dataset


class PackedDataset(Dataset):
    def __init__(self, n):
        self.items = [torch.arange(i, i + 4) for i in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return {"input_ids": self.items[idx], "labels": self.items[idx].clone()}


def train(num_steps=3):
    dataset = PackedDataset(6)
    dataloader = DataLoader(
        dataset,
        batch_size=1,
        collate_fn=lambda x: x[0],  # hazard: GML212
        num_workers=1,
    )
    for step, batch in enumerate(dataloader):
        if step >= num_steps:
            break
        print(step, batch["input_ids"].tolist())


if __name__ == "__main__":
    train()
