# source: https://github.com/osmr/imgclsmob/issues/13
# family: autograd "modified by an inplace operation" on a saved tensor
# symptom: training Xception raises "one of the variables needed for gradient computation has been
#   modified by an inplace operation"; removing inplace=True from the ReLUs fixes it
# hazard: the unit's first block applies ReLU(inplace=True) to x, which identity_conv saved for backward
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 8, 8, 8]], which is output 0 of Relu, is at version 1; expected version 0 instead. ...
import torch
import torch.nn as nn


class DwsConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, activate):
        super().__init__()
        self.activate = activate
        if self.activate:
            self.activ = nn.ReLU(inplace=True)
        self.dw_conv = nn.Conv2d(in_channels, in_channels, 3, padding=1, groups=in_channels, bias=False)
        self.pw_conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        if self.activate:
            x = self.activ(x)  # hazard: GML109
        return self.bn(self.pw_conv(self.dw_conv(x)))


class XceptionUnit(nn.Module):
    def __init__(self, in_channels, out_channels, stride, reps, start_with_relu=True):
        super().__init__()
        self.resize_identity = (in_channels != out_channels) or (stride != 1)
        if self.resize_identity:
            self.identity_conv = nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False)
        self.body = nn.Sequential()
        for i in range(reps):
            in_channels_i = in_channels if i == 0 else out_channels
            self.body.add_module("block{}".format(i + 1),
                                 DwsConvBlock(in_channels_i, out_channels, activate=(start_with_relu if i == 0 else True)))
        if stride != 1:
            self.body.add_module("pool", nn.MaxPool2d(3, stride=stride, padding=1))

    def forward(self, x):
        identity = self.identity_conv(x) if self.resize_identity else x
        x = self.body(x)  # hazard-via: GML109
        return x + identity


features = nn.Sequential(XceptionUnit(8, 8, 1, 2), XceptionUnit(8, 16, 2, 2))
features(torch.randn(2, 8, 8, 8)).sum().backward()
print("backward done")
