# source: https://github.com/pytorch/pytorch/issues/4718
# family: in-place writes on expanded tensors: a per-sample tensor expanded over a sequence, multiplied in place
# symptom: `a = a_.expand(2, 4, 2)` then `a.mul_(b)` with b (4, 2) gave every row of a sample the same product (the
#   last one), while `a.mul(b)` gave the expected values; "I think it's a bug" (torch 2.13 raises "unsupported
#   operation: more than one element of the written-to tensor refers to a single memory location")
# hazard: `features.mul_(position_weights)` on the expansion of the per-sample features over the time steps
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor
#   refers to a single memory location. (the report's torch returned the wrong products silently)
import torch


def weight_over_time(per_sample, position_weights):
    batch, _, dim = per_sample.shape
    steps = position_weights.size(0)
    features = per_sample.expand(batch, steps, dim)
    expected = features.mul(position_weights)
    features.mul_(position_weights)  # hazard: GML104
    return features, expected


per_sample = torch.randn(2, 1, 2)
position_weights = torch.randn(4, 2)
got, expected = weight_over_time(per_sample, position_weights)
print("in-place equals out-of-place:", torch.allclose(got, expected))
