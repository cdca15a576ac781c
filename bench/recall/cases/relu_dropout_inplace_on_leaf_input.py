# source: https://github.com/pytorch/pytorch/issues/727
# family: autograd in-place errors: a leaf that requires grad written in place
# symptom: "F.relu(inplace) followed by F.dropout(inplace) breaks backward pass" (PyTorch 0.1.9); the maintainer:
#   "You can't apply in-place operations to leaf Variables. Just remove the inplace flag"
# hazard: `F.relu(x, inplace=True)` on x, a leaf Variable made with requires_grad=True
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd import Variable

x = Variable(torch.from_numpy(np.random.randn(4, 6, 10, 10)).float(), requires_grad=True)
x = F.relu(x, inplace=True)  # hazard: GML108
x = F.dropout(x, p=0.1, inplace=True)
result = torch.sum(x)
result.backward()
