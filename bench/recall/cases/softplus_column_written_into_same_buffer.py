# source: https://github.com/pytorch/pytorch/issues/114505
# family: autograd in-place errors: a slice of a buffer saved by an op, then another slice of the buffer written
# symptom: computing the Jacobian of a function that fills `b` column by column, with the second column computed by
#   Softplus from the first, fails with "one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [3]], which is output 0 of AsStridedBackward0, is at version 2; expected
#   version 1"; with `b[:, 0].clone()` it works
# hazard: `b[:, 1] = ...` writes `b`, whose column `b[:, 0]` Softplus saved for backward
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by
#   an inplace operation: [torch.FloatTensor [3]], which is output 0 of AsStrided, is at version 2; expected version 1
import torch
from torch import nn


class TwoStageMap:
    def __init__(self):
        self.activation = nn.Softplus()

    def __call__(self, a):
        b = torch.zeros_like(a)
        b[:, 0] = a[:, 0]
        b[:, 1] = self.activation(b[:, 0])  # hazard: GML109
        return b


f = TwoStageMap()
x = torch.randn(3, 2)
print(torch.autograd.functional.jacobian(f, x).shape)
