# source: https://github.com/leaderj1001/Attention-Augmented-Conv2d/issues/31 (code: attention_augmented_conv.py,
#   AugmentedConv.compute_flat_qkv and split_heads_2d)
# family: autograd in-place errors: a view of an output of split written in place
# symptom: "Output 0 of ReshapeAliasBackward0 is a view and is being modified inplace. This view is the output of a
#   function that returns multiple views" when the reporter's network runs an AugmentedConv
# hazard: `q *= dkh ** -0.5` on the reshape (split_heads_2d) of the first output of torch.split(qkv, ...)
# runs-on-cpu: yes. The reporter's AACNN cut to one AugmentedConv with relative=False
# printed (torch 2.13): RuntimeError: Output 0 of ReshapeAlias is a view and is being modified inplace. This view is
#   the output of a function that returns multiple views. ...
import torch
import torch.nn as nn
import torch.nn.functional as F


class AugmentedConv(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, dk, dv, Nh, relative):
        super(AugmentedConv, self).__init__()
        self.dk, self.dv, self.Nh, self.relative = dk, dv, Nh, relative
        self.conv_out = nn.Conv2d(in_channels, out_channels - dv, kernel_size, padding=1)
        self.qkv_conv = nn.Conv2d(in_channels, 2 * dk + dv, kernel_size=1)
        self.attn_out = nn.Conv2d(dv, dv, 1)

    def forward(self, x):
        batch, _, height, width = x.size()
        conv_out = self.conv_out(x)
        flat_q, flat_k, flat_v, q, k, v = self.compute_flat_qkv(x, self.dk, self.dv, self.Nh)
        logits = torch.matmul(flat_q.transpose(2, 3), flat_k)
        weights = F.softmax(logits, dim=-1)
        attn_out = torch.matmul(weights, flat_v.transpose(2, 3))
        attn_out = torch.reshape(attn_out, (batch, self.dv, height, width))
        return torch.cat((conv_out, self.attn_out(attn_out)), dim=1)

    def compute_flat_qkv(self, x, dk, dv, Nh):
        N, _, H, W = x.size()
        qkv = self.qkv_conv(x)
        q, k, v = torch.split(qkv, [dk, dk, dv], dim=1)
        q = self.split_heads_2d(q, Nh)
        k = self.split_heads_2d(k, Nh)
        v = self.split_heads_2d(v, Nh)
        dkh = dk // Nh
        q *= dkh ** -0.5  # hazard: GML105
        flat_q = torch.reshape(q, (N, Nh, dk // Nh, H * W))
        flat_k = torch.reshape(k, (N, Nh, dk // Nh, H * W))
        flat_v = torch.reshape(v, (N, Nh, dv // Nh, H * W))
        return flat_q, flat_k, flat_v, q, k, v

    def split_heads_2d(self, x, Nh):
        batch, channels, height, width = x.size()
        return torch.reshape(x, (batch, Nh, channels // Nh, height, width))


conv1 = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU())
augmented_conv1 = AugmentedConv(in_channels=3, out_channels=20, kernel_size=3, dk=40, dv=4, Nh=4, relative=False)
out = augmented_conv1(conv1(torch.randn(2, 1, 16, 16)))
out.sum().backward()
print(out.shape)
