# source: https://github.com/iMED-Lab/ER-Net/pull/3 (code: ER_Net.py, ResEncoder)
# family: autograd in-place errors: a tensor saved for backward overwritten by a later in-place write
# symptom: "out+=residual is a inplace operation which will cause erros below (pytorch version : 1.13.1)":
#   RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation:
#   [torch.cuda.FloatTensor [4, 32, 64, 64, 64]], which is output 0 of ReluBackward0, is at version 1
# hazard: `out += residual` on the output of self.relu, which ReLU saved for its backward
# runs-on-cpu: yes (a small volume and the first two encoders of ER_Net)
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 64, 4, 4, 4]], which is output 0 of Relu, is at version 1; expected version 0 instead.
import torch
import torch.nn as nn


def downsample():
    return nn.MaxPool3d(kernel_size=2, stride=2)


class ResEncoder(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(ResEncoder, self).__init__()
        self.conv1 = nn.Conv3d(in_channels, out_channels, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm3d(out_channels)
        self.conv2 = nn.Conv3d(out_channels, out_channels, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm3d(out_channels)
        self.relu = nn.ReLU(inplace=False)
        self.conv1x1 = nn.Conv3d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        residual = self.conv1x1(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out += residual  # hazard: GML109
        out = self.relu(out)
        return out


class ER_Net(nn.Module):
    def __init__(self, classes, channels):
        super(ER_Net, self).__init__()
        self.encoder1 = ResEncoder(channels, 32)
        self.encoder2 = ResEncoder(32, 64)
        self.down = downsample()
        self.final = nn.Conv3d(64, classes, kernel_size=1, padding=0)

    def forward(self, x):
        enc1 = self.encoder1(x)
        down1 = self.down(enc1)
        enc2 = self.encoder2(down1)
        return torch.sigmoid(self.final(enc2))


net = ER_Net(classes=1, channels=1)
net(torch.randn(2, 1, 8, 8, 8)).mean().backward()
print(net.encoder1.conv1.weight.grad.shape)
