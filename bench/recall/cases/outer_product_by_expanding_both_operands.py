# source: https://github.com/pytorch/pytorch/issues/17185
# family: in-place writes on expanded tensors: both operands expanded so that an in-place product broadcasts
# symptom: `a *= b` with a (1, 3) and b (2, 1) refuses to broadcast, so the reporter expanded both to (2, 3) first;
#   the in-place product then gave [[20, 40, 60], [20, 40, 60]] instead of [[4, 8, 12], [5, 10, 15]] (torch 2.13 raises
#   "unsupported operation: more than one element of the written-to tensor refers to a single memory location")
# hazard: `a *= b` where `a` is the (2, 3) expansion of a (1, 3) tensor
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor
#   refers to a single memory location. (the report's torch printed [[20, 40, 60], [20, 40, 60]])
import torch


def scaled_rows(row, scales):
    a = row.view(1, -1)
    b = scales.view(-1, 1)
    shape = (b.size(0), a.size(1))
    a = a.expand(*shape)
    b = b.expand(*shape)
    a *= b  # hazard: GML104
    return a


print(scaled_rows(torch.tensor([1, 2, 3]), torch.tensor([4, 5])))
