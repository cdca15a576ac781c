# source: https://github.com/Jee-King/TSAN/issues/3
# family: autograd "modified by an inplace operation" on a saved tensor
# symptom: training TSAN raises "one of the variables needed for gradient computation has been modified
#   by an inplace operation"; the fix is `out = x.clone()` in CSB.forward (model/tsan.py line 103)
# hazard: CSB writes its quadrants through `out = x`, an alias of the input that the sibling
#   branch (self.drb) saved for backward in MCAB.forward
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [1, 8, 8, 8]], which is output 0 of torch::autograd::CopySlices, is at version 4; expected version 0 instead. ...
import torch
import torch.nn as nn
import torch.nn.functional as F


class DRB(nn.Module):
    def __init__(self, n_feats):
        super().__init__()
        self.dense_layers = nn.Sequential(nn.Conv2d(n_feats, n_feats, 3, padding=1), nn.ReLU(inplace=True))
        self.conv_1x1 = nn.Conv2d(n_feats, n_feats, kernel_size=1, bias=False)

    def forward(self, x):
        out = self.conv_1x1(self.dense_layers(x))
        return x + out


class CSB(nn.Module):
    def __init__(self, n_feats):
        super().__init__()
        self.conv1 = nn.Conv2d(n_feats * 4, n_feats * 4, kernel_size=1, bias=False)

    def forward(self, x):
        h, w = x.size(2) // 2, x.size(3) // 2
        f1, f2 = x[:, :, :h, :w], x[:, :, h:, :w]
        f3, f4 = x[:, :, :h, w:], x[:, :, h:, w:]
        f_all = self.conv1(torch.cat([f1, f2, f3, f4], 1))
        c = f_all.size(1) // 4
        out = x
        out[:, :, :h, :w] = f_all[:, :c]  # hazard: GML109
        out[:, :, h:, :w] = f_all[:, c:2 * c]
        out[:, :, :h, w:] = f_all[:, 2 * c:3 * c]
        out[:, :, h:, w:] = f_all[:, 3 * c:]
        return out


class MCAB(nn.Module):
    def __init__(self, n_feats):
        super().__init__()
        self.drb = DRB(n_feats)
        self.csb = CSB(n_feats)
        self.conv3 = nn.Conv2d(n_feats, n_feats, kernel_size=3, padding=1, bias=False)

    def forward(self, x):
        down_b = self.drb(x)
        top_b = self.csb(x)  # hazard-via: GML109
        top_b = F.sigmoid(self.conv3(top_b))
        return down_b * top_b


first_conv = nn.Conv2d(3, 8, 1)
body = MCAB(8)
out = body(torch.relu(first_conv(torch.randn(1, 3, 8, 8))))
out.mean().backward()
