# source: https://github.com/mlverse/torchbook_materials/issues/1
# family: aliasing that silently changes values: the numpy bridge
# symptom: n = t.numpy(); writing n[0, 0] = 777 changes the tensor t as well (noted as a topic for the book:
#   "shared storage")
# hazard: item write on the numpy side of t.numpy() while t is still used
# runs-on-cpu: yes
# printed (torch 2.13): [[777.   0.] [  0.   0.]] then tensor([[777.,   0.], [  0.,   0.]])
import torch

t = torch.zeros(2, 2)
print(t)

import numpy as np

n = t.numpy()
print(n)
n[0, 0] = 777  # hazard: GML106
print(n)
print(t)
