# source: https://github.com/YutaroOgawa/pytorch_advanced/issues/160 (book notebook 5_gan_generation/5-1_2_DCGAN.ipynb, "transposed convolution example")
# family: autograd in-place write on a view of a leaf that requires grad (a Parameter)
# symptom: the book's cell setting a Conv2d's kernel by item assignment raises "a view of a leaf Variable that
#   requires grad is being used in an in-place operation." on current PyTorch; fix: m.weight.data[0, 0, 0, 0] = 1
# hazard: item assignment into m.weight, a Parameter
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.
import torch
import torch.nn as nn

input = torch.tensor([[[[1., 1.], [2., 2.]]]])

print("normal convolution")
m = nn.Conv2d(1, 1, 2, stride=1, bias=False)
try:
    m.weight[0, 0, 0, 0] = 1  # hazard: GML108
    m.weight[0, 0, 0, 1] = 2
    m.weight[0, 0, 1, 0] = 3
    m.weight[0, 0, 1, 1] = 4
    print(m(input))
except RuntimeError as error:
    print("RuntimeError:", error)
