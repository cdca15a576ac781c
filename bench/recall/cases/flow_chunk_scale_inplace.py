# source: https://github.com/pytorch/pytorch/issues/46820 (the comments of linqingfan, 2020-10-26)
# family: autograd in-place errors: writes on multi-output views
# symptom: "simple v *= v_scale error": scaling the two halves of a predicted flow field obtained with
#   `u, v = flow.chunk(2, dim=1)` in place warned "Output 1 of SplitBackward is a view and is being modified inplace
#   ... will be forbidden starting from version 1.8", then failed; replacing `u *= u_scale` by `u = u_scale * u` works
# hazard: `u *= u_scale` on an output of `flow.chunk(2, dim=1)`, flow being the network's output
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: Output 0 of Split is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.
import torch
import torch.nn as nn


class FlowNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(6, 2, 3, padding=1)

    def forward(self, im1, im2):
        return self.conv(torch.cat([im1, im2], dim=1))


def rescale_flow(flow, height, width):
    u_scale = (width - 1) / 2.0
    v_scale = (height - 1) / 2.0
    u, v = flow.chunk(2, dim=1)
    u *= u_scale  # hazard: GML105
    v *= v_scale
    return torch.cat([u, v], dim=1)


net = FlowNet()
im1, im2 = torch.randn(2, 3, 16, 24), torch.randn(2, 3, 16, 24)
flow = net(im1, im2)
flow_px = rescale_flow(flow, 16, 24)
flow_px.abs().mean().backward()
print(net.conv.weight.grad.norm())
