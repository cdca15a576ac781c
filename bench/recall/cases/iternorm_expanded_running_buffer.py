# source: https://github.com/huangleiBuaa/IterNorm-pytorch/issues/2
# family: in-place write to an expanded tensor
# symptom: training with IterNorm raises "unsupported operation: more than one element of the
#   written-to tensor refers to a single memory location"; the fix adds .clone() to the expand in __init__
# hazard: the running-whitening-matrix update, a copy_ into the buffer registered as an expand() result
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor refers to a single memory location. ...
import torch
import torch.nn as nn


class iterative_normalization_py(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, running_mean, running_wmat, nc, T, eps, momentum, training):
        g = X.size(1) // nc
        x = X.transpose(0, 1).contiguous().view(g, nc, -1)
        mean = x.mean(-1, keepdim=True)
        xc = x - mean
        sigma = eps * torch.eye(nc).expand(g, nc, nc) + xc.matmul(xc.transpose(1, 2)) / x.size(-1)
        P = torch.eye(nc).expand(g, nc, nc)
        for _ in range(T):
            P = 1.5 * P - 0.5 * P.matmul(P).matmul(P).matmul(sigma)
        wm = P
        if training:
            running_mean.copy_(momentum * mean + (1.0 - momentum) * running_mean)
            running_wmat.copy_(momentum * wm + (1.0 - momentum) * running_wmat)  # hazard: GML104
        return wm.matmul(xc).view(X.size(1), X.size(0), *X.size()[2:]).transpose(0, 1).contiguous()

    @staticmethod
    def backward(ctx, grad):
        return grad, None, None, None, None, None, None, None


class IterNorm(nn.Module):
    def __init__(self, num_features, num_groups=1, T=5, momentum=0.1, eps=1e-5):
        super().__init__()
        self.T, self.eps, self.momentum = T, eps, momentum
        self.num_channels = num_features // num_groups
        self.register_buffer("running_mean", torch.zeros(num_groups, self.num_channels, 1))
        self.register_buffer("running_wm", torch.eye(self.num_channels).expand(num_groups, self.num_channels, self.num_channels))

    def forward(self, X):
        return iterative_normalization_py.apply(X, self.running_mean, self.running_wm, self.num_channels,  # hazard-via: GML104
                                                self.T, self.eps, self.momentum, self.training)


layer = IterNorm(8, num_groups=2)
print(layer(torch.randn(4, 8)).shape)
