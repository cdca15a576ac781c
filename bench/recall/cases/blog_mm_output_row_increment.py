# source: https://www.yongfengli.tk/2018/04/13/inplace-operation-in-pytorch.html ("Some Bugs when use pytorch")
# family: autograd in-place errors: a tensor saved for backward overwritten by a later in-place write
# symptom: the blog's forward adds 1 to each row of b = torch.mm(self.param, a) by `b[i] = b[i] + 1` in a loop
#   that also computes torch.mm(self.param, b); backward raises "one of the variables needed for gradient
#   computation has been modified by an inplace operation"
# hazard: `b[i] = b[i] + 1` writes b, which the previous iteration's torch.mm(self.param, b) saved
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [10, 1]], which is output 0 of torch::autograd::CopySlices, is at version 10; expected version 9 instead.
import torch
import torch.nn as nn
from torch.autograd import Variable


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.param = nn.Parameter(torch.randn(10, 10))

    def forward(self,a):
        b = Variable(torch.Tensor(10,1))
        y = 0
        b = torch.mm(self.param,a)
        for i in range(10):
            b[i] = b[i] + 1 #inpalce operation  # hazard: GML109
            y = y + torch.mm(self.param,b)
        return y


net = Net()
out = net(torch.randn(10, 1))
out.sum().backward()
print(net.param.grad.shape)
