# source: https://github.com/Tencent/ncnn/pull/4338 (nihui's comment "lesson learned about inplace operation", in the
#   pnnx PR that matches the in-place slice copy pattern)
# family: aliasing that silently changes values: a forward that writes the caller's tensor
# symptom: a model whose forward does `x[2:5, ...] += 1` and returns x: after `a = net(x)`, a second `b = net(x)`
#   makes `a` hold twos ("a has some two now !!!"), since a, b and x are one tensor
# hazard: the in-place add on a slice of the forward's argument
# runs-on-cpu: yes
# printed (torch 2.13): a after the first call: tensor([0., 0., 1., 1., 1., 0., 0., 0.]) / a after the second call:
#   tensor([0., 0., 2., 2., 2., 0., 0., 0.])
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        x[2:5, ...] += 1  # hazard: GML107
        return x


def test():
    net = Model()
    net.eval()

    x = torch.zeros(8, 5)

    a = net(x)
    print("a after the first call:", a[:, 0])
    # a has some ones now

    b = net(x)
    print("a after the second call:", a[:, 0])
    # a has some two now !!!


test()
