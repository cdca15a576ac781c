# source: https://github.com/pytorch/pytorch/issues/15358
# family: in-place write to an expanded (stride-0) tensor
# symptom: "+= operates incorrectly on expand-ed tensors": `a = torch.arange(4).expand(5, 4); a += b` gives every row
#   [40, 46, 52, 58] (all five rows of b summed into the one shared row); torch later made it raise
# hazard: `positions += offsets` where positions is a row of indices expanded over the batch
# runs-on-cpu: yes (a batch of position ids with offsets added stands in for the report's arange/b)
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor refers to a
#   single memory location. Please clone() the tensor before performing the operation.
import torch


def position_ids(batch_size, seq_len, offsets):
    positions = torch.arange(seq_len).expand(batch_size, seq_len)
    positions += offsets  # hazard: GML104
    return positions


offsets = torch.arange(20).view(5, 4)
print(position_ids(5, 4, offsets))
