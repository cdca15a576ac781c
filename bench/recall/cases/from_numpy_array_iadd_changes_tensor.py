# source: https://github.com/mrdbourke/pytorch-deep-learning/issues/1279
# family: aliasing that silently changes values: the numpy bridge
# symptom: the course says changing the array does not change a tensor made by torch.from_numpy(array); that holds
#   only for `array = array + 1`; with `array += 1` the tensor changes too, since they share memory
# hazard: `array += 1` writes the numpy side of torch.from_numpy(array) while tensor is still used
# runs-on-cpu: yes
# printed (torch 2.13): (array([2., 3., 4., 5., 6., 7., 8.]), tensor([2., 3., 4., 5., 6., 7., 8.], dtype=torch.float64))
import numpy as np
import torch

# NumPy array to tensor
array = np.arange(1.0, 8.0)
tensor = torch.from_numpy(array)
print((array, tensor))

# Change the array, keep the tensor
array += 1  # hazard: GML106
print((array, tensor))
