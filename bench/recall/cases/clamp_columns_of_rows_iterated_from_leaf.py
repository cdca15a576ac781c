# source: https://github.com/pytorch/pytorch/issues/47899
# family: autograd in-place errors: an in-place write on the rows got by iterating a tensor that requires grad
# symptom: "Tensor iteration changes behavior in 1.7 with no hint": the loop worked in 1.6 and raises in 1.7 "Output 0
#   of UnbindBackward is a view and its base or another view of its base has been modified inplace ... Such functions
#   do not allow the output views to be modified inplace"; Tensor.__iter__ became `iter(self.unbind(0))`
# hazard: `bb[:, 0].clamp_(...)` on `bb`, a row of `for bb in b` with b requiring grad
# runs-on-cpu: yes. The reporter's snippet as posted, with a print after the loop
# printed (torch 2.13): RuntimeError: Output 0 of Select is a view and is being modified inplace. This view is the
#   output of a function that returns multiple views. Such functions do not allow the output views to be modified
#   inplace. You should replace the inplace operation by an out-of-place one.
import torch

b = torch.rand(2, 5, 5, requires_grad=True)
for bb in b:
    bb[:, 0].clamp_(min=0, max=0.3)  # hazard: GML105
    bb[:, 1].clamp_(min=0, max=0.3)
print("clamped:", b[:, :, :2].max().item())
