# source: http://discuss.pytorch.org/t/in-place-operation-and-resnet/10724
# family: autograd "modified by an inplace operation" on a saved tensor
# symptom: of two residual units, ResidualUnitA raises "one of the variables needed for gradient computation has
#   been modified by an inplace operation" and ResidualUnitB does not; the answer: conv_1's backward needs the
#   original x, which `x += residual` overwrote
# hazard: `x += residual` writes x, which conv_1 (and the in-place relu before it) saved for backward
# runs-on-cpu: yes
# printed (torch 2.13): A: RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 24, 8, 8]], which is output 0 of Relu, is at version 3; expected version 1 instead. ...; B: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


# implementation 1
class ResidualUnitA(nn.Module):
    def __init__(self):
        super(ResidualUnitA, self).__init__()
        self.conv_0 = nn.Conv2d(3, 24, 3, padding=1, bias=False)
        self.bn_0 = nn.BatchNorm2d(24)
        self.conv_1 = nn.Conv2d(24, 24, 3, padding=1, bias=False)
        self.bn_1 = nn.BatchNorm2d(24)

    def forward(self, x):
        x = self.conv_0(x)
        x = self.bn_0(x)
        x = F.relu(x, inplace=True)

        residual = self.conv_1(x)
        residual = self.bn_1(residual)
        x += residual  # hazard: GML109
        x = F.relu(x, inplace=True)

        return x


# implementation 2
class ResidualUnitB(nn.Module):
    def __init__(self):
        super(ResidualUnitB, self).__init__()
        self.conv_0 = nn.Conv2d(3, 24, 3, padding=1, bias=False)
        self.bn_0 = nn.BatchNorm2d(24)
        self.conv_1 = nn.Conv2d(24, 24, 3, padding=1, bias=False)
        self.bn_1 = nn.BatchNorm2d(24)

    def forward(self, x):
        x = self.conv_0(x)
        x = self.bn_0(x)
        x = F.relu(x, inplace=True)

        identity = x
        x = self.conv_1(x)
        x = self.bn_1(x)
        x += identity
        x = F.relu(x, inplace=True)

        return x


for name, unit in (("A", ResidualUnitA()), ("B", ResidualUnitB())):
    try:
        unit(torch.randn(2, 3, 8, 8)).sum().backward()
        print(f"{name}: ok")
    except RuntimeError as error:
        print(f"{name}: RuntimeError:", error)
