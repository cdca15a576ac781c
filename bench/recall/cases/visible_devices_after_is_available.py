# source: https://github.com/pytorch/pytorch/issues/23544
# family: environment variable set too late (CUDA_VISIBLE_DEVICES)
# symptom: os.environ['CUDA_VISIBLE_DEVICES'] = cudaIndex has no effect: the program keeps using cuda:0;
#   swapping it with the earlier `use_cuda = torch.cuda.is_available()` makes it work
# hazard: the environment write after torch.cuda.is_available() initialised the driver
# runs-on-cpu: no (CUDA-only: static only)
import argparse
import os

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--cuda-index", default="1")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

use_cuda = torch.cuda.is_available()
os.environ["CUDA_VISIBLE_DEVICES"] = args.cuda_index  # hazard: GML301
device = torch.device("cuda" if use_cuda else "cpu")

model = nn.Linear(32, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(args.epochs):
    x = torch.randn(16, 32, device=device)
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(epoch, loss.item(), torch.cuda.current_device() if use_cuda else "cpu")
