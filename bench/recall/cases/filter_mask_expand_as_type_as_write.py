# source: https://github.com/pytorch/pytorch/issues/42726
# family: in-place writes on expanded tensors: a mask built with expand_as, written per filter
# symptom: building a filter-pruning mask as `ones[:, None, None, None].expand_as(weight).type_as(weight)` and zeroing
#   a pruned filter raises "unsupported operation: more than one element of the written-to tensor refers to a single
#   memory location"; the same code on a boolean mask runs, because there `type_as` copies
# hazard: `mask[idx] = ...` on the expanded view that `type_as` returned unchanged (same dtype: no copy)
# runs-on-cpu: yes. A conv weight and an L1 ranking stand in for the pruner's
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor
#   refers to a single memory location. Please clone() the tensor before performing the operation.
import torch
from torch import nn


class L1FilterPruner:
    def __init__(self, sparsity):
        self.sparsity = sparsity

    def filter_ranking(self, weight):
        return weight.abs().view(weight.size(0), -1).sum(dim=1)

    def calc_mask(self, weight):
        filters = weight.size(0)
        num_prune = int(filters * self.sparsity)
        prune_idx = torch.argsort(self.filter_ranking(weight))[:num_prune]
        ones = torch.ones(filters)
        mask = ones[:, None, None, None].expand_as(weight).type_as(weight)
        for idx in prune_idx.tolist():
            mask[idx] = torch.zeros(weight.shape[1:])  # hazard: GML104
        return mask


conv = nn.Conv2d(4, 4, 3)
pruner = L1FilterPruner(sparsity=0.5)
with torch.no_grad():
    mask = pruner.calc_mask(conv.weight.data)
    conv.weight.mul_(mask)
print("filters kept:", int((mask.view(4, -1).sum(dim=1) > 0).sum()))
