# source: https://github.com/PingoLH/FCHarDNet/issues/61
# family: autograd in-place error on a view of a leaf that requires grad
# symptom: test.py's conv+BN fusion `cconv.weight[:,:,:,:] = W[:,:,:,:]` raises
#   "a view of a leaf Variable that requires grad is being used in an in-place operation"
# hazard: the slice assignment into the new conv's weight (a fresh Parameter), outside torch.no_grad()
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: a leaf Variable that requires grad is being used in an in-place operation. (the full slice; the reporter saw "a view of a leaf")
import torch
import torch.nn as nn


class ConvLayer(nn.Sequential):
    def __init__(self, in_channels, out_channels, kernel=3):
        super().__init__()
        self.add_module("conv", nn.Conv2d(in_channels, out_channels, kernel, padding=kernel // 2, bias=False))
        self.add_module("norm", nn.BatchNorm2d(out_channels))
        self.add_module("relu", nn.ReLU(inplace=True))


def fuse_bn_recursively(model):
    for name, child in model.named_children():
        if isinstance(child, ConvLayer):
            conv, bn = child.conv, child.norm
            cconv = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, padding=conv.padding, bias=True)
            scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            W = conv.weight * scale.view(-1, 1, 1, 1)
            b = bn.bias - bn.running_mean * scale
            cconv.weight[:, :, :, :] = W[:, :, :, :]  # hazard: GML108
            cconv.bias[:] = b[:]
            setattr(model, name, nn.Sequential(cconv, nn.ReLU(inplace=True)))
        else:
            fuse_bn_recursively(child)
    return model


net = nn.Sequential(ConvLayer(3, 8), nn.Sequential(ConvLayer(8, 8), ConvLayer(8, 4)))
net.eval()
print(fuse_bn_recursively(net))
