# source: https://github.com/mrdbourke/pytorch-deep-learning/issues/926
# family: aliasing that silently changes values: the numpy bridge (torch.from_numpy shares memory)
# symptom: "Small mistake in discussion of shared memory in `torch.from_numpy(ndarray)`": the course says the tensor
#   and the array are not linked; writing `array[0] = 5.0` after `tensor = torch.from_numpy(array)` shows both start
#   with 5.0
# hazard: `array[0] = 5.0`, a write through the array that torch.from_numpy(array) shares with tensor
# runs-on-cpu: yes
# printed (torch 2.13): [5. 2. 3. 4. 5. 6. 7.] tensor([5., 2., 3., 4., 5., 6., 7.], dtype=torch.float64)
import torch
import numpy as np

array = np.arange(1.0, 8.0)
tensor = torch.from_numpy(array)

array[0] = 5.0  # hazard: GML106
print(array, tensor) # array and tensor now both start with 5.
