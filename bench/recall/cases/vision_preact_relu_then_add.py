# source: https://github.com/pytorch/vision/issues/807 (the maintainer's answer, with resnet.py's BasicBlock)
# family: autograd "modified by an inplace operation" on a saved tensor
# symptom: swapping the BasicBlock's last two lines to `out = self.relu(out); out += identity` makes
#   backward raise "one of the variables needed for gradient computation has been modified by an inplace operation"
# hazard: `out += identity` writes the output that the in-place ReLU saved for backward
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 8, 8, 8]], which is output 0 of Relu, is at version 2; expected version 1 instead. ...
import torch
import torch.nn as nn


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out = self.relu(out)
        out += identity  # hazard: GML109
        return out


blocks = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8))
blocks(torch.randn(2, 8, 8, 8)).sum().backward()
print("backward done")
