# source: https://github.com/paul007pl/VRCNet/issues/33 (code: models/vrcnet.py Linear_ResBlock, Model.forward)
# family: autograd in-place errors: an output of chunk (a multi-output view) modified in place
# symptom: "error during training VRCNet": the traceback ends in Linear_ResBlock.forward (vrcnet.py line 97), called
#   from `o_x = self.posterior_infer2(self.posterior_infer1(feat_x))`, with "Output 0 of SplitBackward0 is a view and
#   is being modified inplace. This view is the output of a function that returns multiple views."
# hazard: Linear_ResBlock's `self.af = nn.ReLU(inplace=True)` applied to its argument `feature`, which in training is
#   feat_x, the first half of `feat.chunk(2)`
# runs-on-cpu: yes. A Linear over the mean point stands in for PCN_encoder, a random subset of gt for pointnet2's
#   furthest-point gather; the decoder and the losses after posterior_infer are dropped (the error comes first)
# printed (torch 2.13): RuntimeError: Output 0 of Split is a view and is being modified inplace. This view is the
#   output of a function that returns multiple views. Such functions do not allow the output views to be modified
#   inplace. You should replace the inplace operation by an out-of-place one.
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class PCN_encoder(nn.Module):
    def __init__(self, output_size=1024):
        super(PCN_encoder, self).__init__()
        self.fc = nn.Linear(3, output_size)

    def forward(self, x):
        return self.fc(x.mean(2))


class Linear_ResBlock(nn.Module):
    def __init__(self, input_size=1024, output_size=256):
        super(Linear_ResBlock, self).__init__()
        self.conv1 = nn.Linear(input_size, input_size)
        self.conv2 = nn.Linear(input_size, output_size)
        self.conv_res = nn.Linear(input_size, output_size)

        self.af = nn.ReLU(inplace=True)

    def forward(self, feature):
        return self.conv2(self.af(self.conv1(self.af(feature)))) + self.conv_res(feature)  # hazard: GML105


class Model(nn.Module):
    def __init__(self, args, size_z=128, global_feature_size=1024):
        super(Model, self).__init__()
        self.size_z = size_z
        self.encoder = PCN_encoder(output_size=global_feature_size)
        self.posterior_infer1 = Linear_ResBlock(input_size=global_feature_size, output_size=global_feature_size)
        self.posterior_infer2 = Linear_ResBlock(input_size=global_feature_size, output_size=size_z * 2)
        self.prior_infer = Linear_ResBlock(input_size=global_feature_size, output_size=size_z * 2)

    def forward(self, x, gt, is_training=True, mean_feature=None, alpha=None):
        num_input = x.size()[2]
        if is_training:
            y = gt.transpose(1, 2)[:, :, torch.randperm(gt.size(1))[:num_input]].contiguous()
            points = torch.cat([x, y], dim=0)
            x = torch.cat([x, x], dim=0)
        else:
            points = x
        feat = self.encoder(points)

        if is_training:
            feat_x, feat_y = feat.chunk(2)
            o_x = self.posterior_infer2(self.posterior_infer1(feat_x))  # hazard-via: GML105
            q_mu, q_std = torch.split(o_x, self.size_z, dim=1)
            o_y = self.prior_infer(feat_y)
            p_mu, p_std = torch.split(o_y, self.size_z, dim=1)
            q_std = F.softplus(q_std)
            p_std = F.softplus(p_std)
            return (q_mu - p_mu).pow(2).mean() + (q_std - p_std).pow(2).mean()


net = Model(SimpleNamespace())
inputs, gt = torch.randn(2, 3, 64), torch.randn(2, 256, 3)
net_loss = net(inputs, gt, alpha=0.01)
net_loss.backward()
