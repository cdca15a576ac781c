# source: https://github.com/pytorch/pytorch/issues/144861
# family: in-place write whose source overlaps its destination (a slice copied onto itself shifted by one column)
# symptom: "Region check for in-place read and write does not always work": `arr[1:, :] = arr[:-1, :]` raises, but
#   `arr[:, 1:] = arr[:, :-1]` on the CPU silently gives [[0, 0, 0], [3, 3, 3], [6, 6, 6]] where CUDA and numpy give
#   [[0, 0, 1], [3, 3, 4], [6, 6, 7]]
# hazard: `arr[:, 1:] = arr[:, :-1]` on the CPU tensor
# runs-on-cpu: yes
# printed (torch 2.13): torch: tensor([[0, 0, 0], [3, 3, 3], [6, 6, 6]]); numpy: [[0 0 1] [3 3 4] [6 6 7]]
import numpy as np
import torch

ref = np.arange(9).reshape(3, 3)
ref[:, 1:] = ref[:, :-1]

arr = torch.arange(9).reshape(3, 3)
arr[:, 1:] = arr[:, :-1]  # hazard: GML110
print("torch:", arr)
print("numpy:", ref)
