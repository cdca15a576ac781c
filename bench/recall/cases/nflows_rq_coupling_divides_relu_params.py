# source: https://github.com/bayesiains/nflows/issues/89 (code: nflows/transforms/coupling.py,
#   PiecewiseRationalQuadraticCouplingTransform._piecewise_cdf, the `/=` at line 555)
# family: autograd in-place errors: a view of a tensor saved for backward written in place
# symptom: "one of the variables needed for gradient computation has been modified by an inplace operation:
#   [torch.cuda.FloatTensor [256, 71]], which is output 0 of ReluBackward0" at backward; the reporter's transform
#   net ends in a ReLU and has `hidden_features`, so the coupling layer scales its output slices in place
# hazard: `unnormalized_widths /= np.sqrt(...)` on a slice of the transform net's output, which ReLU saved
# runs-on-cpu: yes. A two-layer net ending in ReLU stands in for the reporter's; a softmax-and-sum stands in for
#   the rational-quadratic spline
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [8, 16]], which is output 0 of Relu, is at version 2; expected version 0
import numpy as np
import torch
import torch.nn as nn


class TransformNet(nn.Module):
    def __init__(self, in_features, out_features, hidden_features=16):
        super().__init__()
        self.hidden_features = hidden_features
        self.net = nn.Sequential(nn.Linear(in_features, hidden_features), nn.Linear(hidden_features, out_features),
                                 nn.ReLU())

    def forward(self, x, context=None):
        return self.net(x)


class PiecewiseRationalQuadraticCouplingTransform(nn.Module):
    def __init__(self, mask, num_bins=3):
        super().__init__()
        mask = torch.as_tensor(mask)
        self.num_bins = num_bins
        self.register_buffer("identity_features", torch.arange(len(mask)).masked_select(mask <= 0))
        self.register_buffer("transform_features", torch.arange(len(mask)).masked_select(mask > 0))
        self.transform_net = TransformNet(len(self.identity_features),
                                          len(self.transform_features) * (num_bins * 3 - 1))

    def forward(self, inputs, context=None):
        identity_split = inputs[:, self.identity_features, ...]
        transform_split = inputs[:, self.transform_features, ...]
        transform_params = self.transform_net(identity_split, context)
        b, d = transform_split.shape
        transform_params = transform_params.reshape(b, d, -1)
        return self._piecewise_cdf(transform_split, transform_params)

    def _piecewise_cdf(self, inputs, transform_params, inverse=False):
        unnormalized_widths = transform_params[..., : self.num_bins]
        unnormalized_heights = transform_params[..., self.num_bins : 2 * self.num_bins]
        if hasattr(self.transform_net, "hidden_features"):
            unnormalized_widths /= np.sqrt(self.transform_net.hidden_features)  # hazard: GML109
            unnormalized_heights /= np.sqrt(self.transform_net.hidden_features)
        widths = torch.softmax(unnormalized_widths, dim=-1)
        heights = torch.softmax(unnormalized_heights, dim=-1)
        return inputs * (widths * heights).sum(-1)


flow = PiecewiseRationalQuadraticCouplingTransform(mask=[1, 0, 1, 0])
x = torch.randn(8, 4)
flow(x).sum().backward()
print("backward ran")
