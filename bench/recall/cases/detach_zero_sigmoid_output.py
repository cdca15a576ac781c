# source: https://github.com/pytorch/pytorch/issues/6990 (the example in the maintainer's answer)
# family: autograd "modified by an inplace operation" through a .detach() alias of a saved tensor
# symptom: "what is the difference between .data and .detach()?"; the answer's example: zeroing out.detach()
#   zeroes out itself, and out.sum().backward() raises, since sigmoid's backward needs the original out
# hazard: c.zero_() on the detach() alias of sigmoid's saved output
# runs-on-cpu: yes
# printed (torch 2.13): tensor([0., 0., 0.], grad_fn=<SigmoidBackward0>); RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3]], which is output 0 of Sigmoid, is at version 1; expected version 0 instead. ...
import torch

a = torch.tensor([1, 2, 3.], requires_grad=True)
out = a.sigmoid()
c = out.detach()
c.zero_()  # hazard: GML109

print(out)  # modified by c.zero_() !!
try:
    out.sum().backward()  # Requires the original value of out, but that was overwritten by c.zero_()
except RuntimeError as error:
    print("RuntimeError:", error)
