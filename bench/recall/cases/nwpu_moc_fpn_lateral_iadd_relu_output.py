# source: https://github.com/lyongo/NWPU-MOC/issues/4 (code: models/FPN/FPN_Head.py, FPN.forward and Conv2d)
# family: autograd in-place errors: a saved tensor written in place (the output of a ReLU, kept in a list)
# symptom: `python3 train.py` fails in backward with "one of the variables needed for gradient computation has been
#   modified by an inplace operation: [torch.cuda.FloatTensor [4, 128, 64, 64]], which is output 0 of
#   ReluBackward0"; inplace=False did not help; the answer: change the `+=` of FPN_Head.py line 101 into `=`
# hazard: `laterals[i - 1] += F.interpolate(...)` adds into a lateral, the output of the Conv2d block's ReLU
# runs-on-cpu: yes. Random feature maps stand in for the Swin backbone's outputs, a mean for the counting loss
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [1, 8, 8, 8]], which is output 0 of Relu, is at version 1; expected
#   version 0 instead. ...
import torch
import torch.nn as nn
import torch.nn.functional as F


class Conv2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, NL='relu', same_padding=False, bn=True,
                 bias=True):
        super(Conv2d, self).__init__()
        padding = int((kernel_size - 1) // 2) if same_padding else 0
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding=padding, bias=bias)
        self.bn = nn.BatchNorm2d(out_channels) if bn else None
        self.relu = nn.ReLU(inplace=False) if NL == 'relu' else None

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        if self.relu is not None:
            x = self.relu(x)
        return x


class FPN(nn.Module):
    def __init__(self, in_channels, out_channels, num_outs, start_level=0, bn=True):
        super(FPN, self).__init__()
        self.in_channels = in_channels
        self.start_level = start_level
        self.lateral_convs = nn.ModuleList()
        self.fpn_convs = nn.ModuleList()
        for i in range(start_level, len(in_channels)):
            self.lateral_convs.append(Conv2d(in_channels[i], out_channels, 1, bn=bn, bias=not bn, same_padding=True))
            self.fpn_convs.append(Conv2d(out_channels, out_channels, 3, bn=bn, bias=not bn, same_padding=True))

    def forward(self, inputs):
        laterals = [lateral_conv(inputs[i + self.start_level]) for i, lateral_conv in enumerate(self.lateral_convs)]
        used_backbone_levels = len(laterals)
        for i in range(used_backbone_levels - 1, 0, -1):
            prev_shape = laterals[i - 1].shape[2:]
            laterals[i - 1] += F.interpolate(laterals[i], size=prev_shape, mode='nearest')  # hazard: GML109
        outs = [self.fpn_convs[i](laterals[i]) for i in range(used_backbone_levels)]
        return tuple(outs)


neck = FPN([4, 8, 16], 8, 3)
feats = [torch.randn(1, 4, 16, 16), torch.randn(1, 8, 8, 8), torch.randn(1, 16, 4, 4)]
outs = neck(feats)
loss = sum(o.mean() for o in outs)
loss.backward()
print("backward done")
