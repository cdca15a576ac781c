# source: https://github.com/ShusenTang/Dive-into-DL-PyTorch/issues/55
# family: in-place write through .data between the forward pass and backward()
# symptom: the book says changing x.data "does not affect backpropagation", yet x.grad changes when
#   `x.data *= 100` runs between y = 2*x*x and y.backward(): backward uses the values written since
# hazard: the write through .data after the forward pass saved x for backward
# runs-on-cpu: yes
# printed (torch 2.13): tensor([100.], requires_grad=True) tensor([202.]) (4 without the write)
import torch

x = torch.ones(1, requires_grad=True)
y = 2 * x * x
x.data *= 100  # hazard: GML101
y.backward()
print(x, x.grad)
