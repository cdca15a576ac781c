# source: https://github.com/pytorch/pytorch/issues/4664
# family: in-place writes on expanded tensors / overlapping memory
# symptom: "Bug in inplace operation after expansion": `b = a.expand(4, 5); b += 1` printed all elements as 21
#   (1 + 4*5) instead of 2: the in-place add ran once per element on the single stored value
# hazard: `b += 1` on a tensor expanded from a (1, 1) tensor (stride 0 in both dimensions)
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor refers to
#   a single memory location. Please clone() the tensor before performing the operation.
import torch

a = torch.ones(1, 1)  # same thing for rand(1,1) or zeros(1,1)
b = a.expand(4, 5)
print(b)
b += 1  # hazard: GML104
print(b)  # expected all elements to be 2
