# source: https://github.com/pyg-team/pytorch_geometric/pull/4424 (code: torch_geometric/nn/models/dimenet.py, BesselBasisLayer, before the fix)
# family: autograd in-place errors: writes into a Parameter outside no_grad
# symptom: building `DimeNet(hidden_channels=5, out_channels=19, ...)` raises in BesselBasisLayer.reset_parameters:
#   `RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.`; the fix wraps the
#   re-initialisation in `torch.no_grad()`
# hazard: `torch.arange(1, self.freq.numel() + 1, out=self.freq).mul_(PI)`, writing the Parameter `freq` through out=
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: aten::arange(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.
import math

import torch

PI = math.pi


class Envelope(torch.nn.Module):
    def __init__(self, exponent):
        super().__init__()
        self.p = exponent + 1

    def forward(self, x):
        return 1.0 / x - 0.5 * self.p * x.pow(self.p - 1)


class BesselBasisLayer(torch.nn.Module):
    def __init__(self, num_radial, cutoff=5.0, envelope_exponent=5):
        super().__init__()
        self.cutoff = cutoff
        self.envelope = Envelope(envelope_exponent)
        self.freq = torch.nn.Parameter(torch.empty(num_radial))
        self.reset_parameters()

    def reset_parameters(self):
        torch.arange(1, self.freq.numel() + 1, out=self.freq).mul_(PI)  # hazard: GML108

    def forward(self, dist):
        dist = dist.unsqueeze(-1) / self.cutoff
        return self.envelope(dist) * (self.freq * dist).sin()


class DimeNet(torch.nn.Module):
    def __init__(self, hidden_channels, out_channels, num_radial=6, cutoff=5.0):
        super().__init__()
        self.rbf = BesselBasisLayer(num_radial, cutoff)
        self.lin = torch.nn.Linear(num_radial, out_channels)

    def forward(self, dist):
        return self.lin(self.rbf(dist))


model = DimeNet(hidden_channels=5, out_channels=19, num_radial=1)
print(model(torch.rand(10) + 0.5).shape)
