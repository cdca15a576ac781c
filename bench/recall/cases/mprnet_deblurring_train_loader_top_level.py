# source: https://github.com/swz30/MPRNet/issues/114 (code: Deblurring/train.py)
# family: tensors crossing processes: DataLoader workers started by top-level code (no `if __name__ == "__main__":`)
# symptom: on Windows, training stops with "An attempt has been made to start a new process before the current
#   process has finished its bootstrapping phase" (each spawned worker imports train.py, which builds the loaders and
#   iterates them again)
# hazard: the epoch loop at module level iterating train_loader (num_workers=16)
# runs-on-cpu: yes, under the spawn start method (the reporter's Windows default; run with a sitecustomize that sets
#   spawn, as under Linux's fork it trains). Random patches stand in for GoPro, a conv for MPRNet, an L1 loss for
#   the Charbonnier and edge losses; `.cuda()` dropped, num_workers=2
# printed (torch 2.13): in the worker "RuntimeError: An attempt has been made to start a new process before the
#   current process has finished its bootstrapping phase.", then "RuntimeError: DataLoader worker (pid(s) ...) exited
#   unexpectedly"
import os
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset

os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"

######### Set Seeds ###########
random.seed(1234)
np.random.seed(1234)
torch.manual_seed(1234)


class DataLoaderTrain(Dataset):
    def __init__(self, n, patch_size):
        self.pairs = [(torch.rand(3, patch_size, patch_size), torch.rand(3, patch_size, patch_size)) for _ in range(n)]

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, index):
        tar, inp = self.pairs[index]
        return tar, inp


def get_training_data(rgb_dir, img_options):
    return DataLoaderTrain(16, img_options['patch_size'])


######### Model ###########
model_restoration = nn.Conv2d(3, 3, 3, padding=1)
optimizer = optim.Adam(model_restoration.parameters(), lr=2e-4, betas=(0.9, 0.999), eps=1e-8)
criterion_char = nn.L1Loss()

######### DataLoaders ###########
train_dataset = get_training_data('./Datasets/GoPro/train', {'patch_size': 32})
train_loader = DataLoader(dataset=train_dataset, batch_size=4, shuffle=True, num_workers=2, drop_last=False,
                          pin_memory=False)

for epoch in range(1, 3):
    epoch_start_time = time.time()
    epoch_loss = 0
    model_restoration.train()
    for i, data in enumerate(train_loader, 0):  # hazard: GML211
        for param in model_restoration.parameters():
            param.grad = None
        target = data[0]
        input_ = data[1]
        restored = model_restoration(input_)
        loss = criterion_char(restored, target)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.item()
    print("Epoch: {}\tTime: {:.4f}\tLoss: {:.4f}".format(epoch, time.time() - epoch_start_time, epoch_loss))
