# source: https://github.com/pytorch/pytorch/issues/12230
# family: in-place write on an expanded tensor (an output of torch.broadcast_tensors)
# symptom: `x, mask = torch.broadcast_tensors(x, mask)` then `x.masked_fill_(mask, 0)` gave a wrong result (both copies
#   of each row zeroed alike), unlike `x.masked_fill(mask, 0)`; calling `.contiguous()` on the broadcast tensor first
#   gives the intended result
# hazard: `x.masked_fill_(mask, 0)` on the stride-0 tensor broadcast_tensors returned
# runs-on-cpu: yes
# printed (torch 2.13): UserWarning "Use of masked_fill_ on expanded tensors is deprecated"; got is all zeros where expected keeps one entry of each row
import torch


def mask_scores(scores, mask):
    scores, mask = torch.broadcast_tensors(scores, mask)
    scores.masked_fill_(mask, 0)  # hazard: GML104
    return scores


mask = torch.tensor([[[1, 0]], [[0, 1]]], dtype=torch.bool)
x = torch.randn(2, 2)
print("expected", x.expand(2, 2, 2).masked_fill(mask, 0))
print("got", mask_scores(x, mask))
