# source: https://github.com/pytorch/pytorch/issues/55980
# family: autograd "modified by an inplace operation" on a saved tensor
# symptom: `x[0, :, 0, 0] *= var` works, but the "equal" `x[0, :, 0, 0] = x[0, :, 0, 0] * var` makes
#   backward raise "one of the variables needed for gradient computation has been modified by an
#   inplace operation": the multiplication saved the slice, and the assignment overwrites it
# hazard: the slice assignment whose right-hand side saved that same slice for backward
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [12]], which is output 0 of AsStrided, is at version 1; expected version 0 instead. ...
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(12, 12, 3)

    def forward(self, x, y):
        x = self.conv(x)
        y = self.conv(y)
        var = y.flatten()
        x[0, :, 0, 0] = x[0, :, 0, 0] * var  # hazard: GML109
        loss = torch.mean(x)
        var.register_hook(lambda grad: print("var grad", grad.sum()))
        return loss


model = Model()
x = torch.ones([1, 12, 3, 3]).float()
y = torch.ones([1, 12, 3, 3]).float()
loss = model(x, y)
loss.backward()
