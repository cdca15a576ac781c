# source: https://github.com/pytorch/pytorch/issues/77159
# family: CUDA in DataLoader workers
# symptom: with num_workers > 0, "Cannot re-initialize CUDA in forked subprocess. To use CUDA with
#   multiprocessing, you must use the 'spawn' start method"; the custom Dataset moved each sample to the GPU
# hazard: the .to(device) at the end of __getitem__, which runs in the workers
# runs-on-cpu: no (CUDA-only: static only)
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class MyDataset(Dataset):
    def __init__(self, length, device):
        self.length = length
        self.device = device

    def __len__(self):
        return self.length

    def __getitem__(self, idx):
        sample = torch.rand(10)
        sample = (sample - 0.5) * 2.0
        return sample.to(self.device)  # hazard: GML205


def main():
    device = torch.device("cuda:0")
    model = nn.Linear(10, 1).to(device)
    loader = DataLoader(MyDataset(64, device), batch_size=8, num_workers=2)  # hazard-via: GML205
    for batch in loader:
        print(model(batch).mean().item())


if __name__ == "__main__":
    main()
