# source: https://github.com/hezhangsprinter/DID-MDN/issues/3 (code: test.py, misc.py getLoader)
# family: tensors crossing processes: DataLoader workers started by top-level code (no `if __name__ == "__main__":`)
# symptom: "When I run test.py ... RuntimeError: An attempt has been made to start a new process before the current
#   process has finished its bootstrapping phase. This probably means that you are not using fork to start your child
#   processes and you have forgotten to use the proper idiom in the main module"
# hazard: test.py's module-level testing loop `for i, data in enumerate(valDataloader, 0):` over the loader getLoader
#   built with num_workers=opt.workers (default 1); each spawned worker imports test.py again, parses the arguments,
#   builds the loaders and reaches the same loop
# runs-on-cpu: yes, under the spawn start method (Windows' default; the case sets it, as under Linux's fork it runs).
#   Random image pairs stand in for pix2pix_val, convs for Dense_rain, the residual and the density-label networks;
#   `.cuda()`, Variable(volatile=True), the checkpoint loads and the image saving are dropped
# printed (torch 2.13): in the worker "RuntimeError: An attempt has been made to start a new process before the
#   current process has finished its bootstrapping phase.", then "RuntimeError: DataLoader worker (pid(s) ...) exited
#   unexpectedly"
import argparse
import multiprocessing
import random

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

multiprocessing.set_start_method('spawn', force=True)


class pix2pix_val(Dataset):
    def __init__(self, root, n=4, size=32):
        self.pairs = [(torch.rand(3, size, size), torch.rand(3, size, size), 0) for _ in range(n)]

    def __getitem__(self, index):
        return self.pairs[index]

    def __len__(self):
        return len(self.pairs)


def getLoader(datasetName, dataroot, originalSize, imageSize, batchSize=64, workers=4,
              mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), split='train', shuffle=True, seed=None):
    dataset = pix2pix_val(root=dataroot, size=imageSize)
    dataloader = DataLoader(dataset, batch_size=batchSize, shuffle=shuffle, num_workers=int(workers))
    return dataloader


parser = argparse.ArgumentParser()
parser.add_argument('--dataset', required=False, default='pix2pix', help='')
parser.add_argument('--valDataroot', required=False, default='', help='path to val dataset')
parser.add_argument('--valBatchSize', type=int, default=1, help='input batch size')
parser.add_argument('--imageSize', type=int, default=32, help='the height / width of the cropped input image')
parser.add_argument('--workers', type=int, help='number of data loading workers', default=1)
opt = parser.parse_args()

opt.manualSeed = random.randint(1, 10000)
torch.manual_seed(opt.manualSeed)
opt.dataset = 'pix2pix_val'
valDataloader = getLoader(opt.dataset, opt.valDataroot, opt.imageSize, opt.imageSize, opt.valBatchSize,
                          opt.workers, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), split='val', shuffle=False,
                          seed=opt.manualSeed)

netG = nn.Conv2d(3, 3, 3, padding=1)
residue_net = nn.Conv2d(3, 3, 3, padding=1)
net_label = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 3))

# Begin Testing
for epoch in range(1):
    for i, data in enumerate(valDataloader, 0):  # hazard: GML211
        val_input_cpu, val_target_cpu, label = data
        with torch.no_grad():
            residue = val_input_cpu - residue_net(val_input_cpu)
            label_final = nn.Softmax(dim=1)(net_label(residue)).max(1)[1] + 1
            x_hat_val = netG(val_input_cpu)
        print('Image:' + str(i), label_final.tolist())
