# source: https://github.com/pytorch/pytorch/issues/9391
# family: autograd "modified by an inplace operation" on a saved tensor
# symptom: `b = a.sigmoid(); b[1] = 2; b.sum().backward()` raises "one of the variables needed for
#   gradient computation has been modified by an inplace operation", while the same values computed
#   as 1/((-a).exp()+1) do not
# hazard: the item assignment into the output that sigmoid saved for its backward
# runs-on-cpu: yes
# printed (torch 2.13): first: RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation ... output 0 of Sigmoid ...; second: tensor([0.1966, 0.0000, 0.0452])
import torch

a = torch.tensor([1, 2, 3.0], requires_grad=True)
b = a.sigmoid()
b[1] = 2  # hazard: GML109
try:
    b.sum().backward()
except RuntimeError as error:
    print("first:", error)

a = torch.tensor([1, 2, 3.0], requires_grad=True)
b = 1 / ((-a).exp() + 1)
b[1] = 2
b.sum().backward()
print("second:", a.grad)
