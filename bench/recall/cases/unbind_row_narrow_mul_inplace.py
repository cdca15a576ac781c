# source: https://github.com/pytorch/pytorch/issues/36608
# family: autograd in-place error on an output of unbind (a view taken of one output, then written)
# symptom: `v1 = x.unbind(); v1[0].mul_(2)` is refused ("Output 0 of UnbindBackward is a view and is being modified
#   inplace"), but `v2 = v1[0].narrow(0, 0, 2); v2.mul_(2)` went through and backward gave a wrong gradient for the root
# hazard: `head.mul_(2)` on a narrow of the first row that unbind returned
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: Output 0 of Slice is a view and is being modified inplace. This view is the output of a
#   function that returns multiple views. Such functions do not allow the output views to be modified inplace. ...
#   (the torch of the report ran the narrow write silently and returned root.grad [[2, 2, 0], [0, 0, 0], [0, 0, 0]])
import torch


def scale_first_entries(x, k=2):
    rows = x.unbind()
    head = rows[0].narrow(0, 0, k)
    head.mul_(2)  # hazard: GML105
    return head


root = torch.arange(9.).reshape(3, 3).requires_grad_()
x = root.clone()
out = scale_first_entries(x)
out.sum().backward()
print("root.grad:", root.grad)
