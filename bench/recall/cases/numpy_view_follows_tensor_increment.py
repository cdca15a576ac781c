# source: https://github.com/pytorch/pytorch/issues/97586
# family: numpy bridge (a tensor and its .numpy() array share memory)
# symptom: "When incrementing a tensor using += after creating a numpy array the two share memory":
#   the array printed after `tensor += 1` shows the new values
# hazard: the in-place increment while `np_tensor`, the array made by .numpy(), is still read
# runs-on-cpu: yes
# printed (torch 2.13): tensor([2., 2., 2., 2., 2., 2., 2.]) [2. 2. 2. 2. 2. 2. 2.]
import torch

tensor = torch.ones(7)
np_tensor = tensor.numpy()
print(tensor, np_tensor)
tensor += 1  # hazard: GML106
print(tensor, np_tensor)
