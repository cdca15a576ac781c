# source: https://github.com/pytorch/pytorch/issues/39150
# family: autograd in-place write on a view of a leaf that requires grad
# symptom: slicing an image tensor that requires grad and multiplying the slice in place; under torch 1.5 the
#   error came only at backward, as "leaf variable has been moved into the graph interior"; the whole-leaf
#   version raised at once "a leaf Variable that requires grad has been used in an in-place operation"
# hazard: `bar *= 10` on bar = foo[10:, 10:], a view of the leaf foo
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.
import torch

foo = torch.ones(20, 20).requires_grad_()
bar = foo[10:, 10:]
try:
    bar *= 10  # hazard: GML108
    bar.sum().backward()
except RuntimeError as error:
    print("RuntimeError:", error)
