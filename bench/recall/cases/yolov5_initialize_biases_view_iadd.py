# source: https://github.com/xhwNobody/yolov5_prune_sfp/issues/17 (code: weights/model.py, Model._initialize_biases, as quoted there)
# family: autograd: in-place write to a view of a leaf that requires grad (a Conv2d bias seen as (anchors, outputs))
# symptom: building the model fails in `_initialize_biases` at `b[:, 4] += math.log(8 / (640 / s) ** 2)`:
#   "RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation."
#   (the fix in the thread wraps the two writes in `torch.no_grad()`)
# hazard: `b[:, 4] += ...` on `b = mi.bias.view(m.na, -1)`
# runs-on-cpu: yes (a Detect head of three 1x1 convolutions stands in for YOLOv5's; no backbone)
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.
import math

import torch
import torch.nn as nn


class Detect(nn.Module):
    def __init__(self, nc=80, anchors=3, ch=(16, 32, 64)):
        super().__init__()
        self.nc = nc
        self.no = nc + 5
        self.na = anchors
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)
        self.stride = torch.tensor([8.0, 16.0, 32.0])

    def forward(self, xs):
        return [conv(x) for conv, x in zip(self.m, xs)]


class Model(nn.Module):
    def __init__(self, nc=80):
        super().__init__()
        self.head = Detect(nc=nc)
        self._initialize_biases()

    def _initialize_biases(self, cf=None):
        m = self.head
        for mi, s in zip(m.m, m.stride):
            b = mi.bias.view(m.na, -1)
            b[:, 4] += math.log(8 / (640 / s) ** 2)  # hazard: GML108
            b[:, 5:] += math.log(0.6 / (m.nc - 0.99)) if cf is None else torch.log(cf / cf.sum())
            mi.bias = torch.nn.Parameter(b.view(-1), requires_grad=True)


model_dst = Model(nc=80)
print(sum(p.numel() for p in model_dst.parameters()))
