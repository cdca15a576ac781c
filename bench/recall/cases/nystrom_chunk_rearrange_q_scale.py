# source: https://github.com/lucidrains/nystrom-attention/issues/13 (code: nystrom_attention/nystrom_attention.py,
#   NystromAttention.forward before the fix; the traceback's line 91, `q *= self.scale`; also szc19990412/TransMIL#42)
# family: autograd in-place errors: a view of an output of chunk written in place
# symptom: "Output 0 of PermuteBackward0 is a view and is being modified inplace. This view is the output of a
#   function that returns multiple views" in NystromAttention.forward (TransMIL's TransLayer calls it)
# hazard: `q *= self.scale` on the rearranged first output of `self.to_qkv(x).chunk(3, dim=-1)`
# runs-on-cpu: yes. einops is absent from the venv: a local `rearrange` for the one pattern used (a reshape and a
#   permute, as einops does it); the landmark pooling and pseudo-inverse are cut to a plain softmax attention
# printed (torch 2.13): RuntimeError: Output 0 of Permute is a view and is being modified inplace. This view is the
#   output of a function that returns multiple views. ...
import torch
import torch.nn as nn


def rearrange(t, pattern, h):
    b, n, hd = t.shape  # 'b n (h d) -> b h n d'
    return t.reshape(b, n, h, hd // h).permute(0, 2, 1, 3)


class NystromAttention(nn.Module):
    def __init__(self, dim, dim_head=64, heads=8):
        super().__init__()
        inner_dim = heads * dim_head
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Linear(inner_dim, dim)

    def forward(self, x, mask=None):
        b, n, _, h = *x.shape, self.heads
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=h), (q, k, v))
        q *= self.scale  # hazard: GML105
        attn = (q @ k.transpose(-1, -2)).softmax(dim=-1)
        out = (attn @ v).permute(0, 2, 1, 3).reshape(b, n, -1)
        return self.to_out(out)


class TransLayer(nn.Module):
    def __init__(self, norm_layer=nn.LayerNorm, dim=64):
        super().__init__()
        self.norm = norm_layer(dim)
        self.attn = NystromAttention(dim=dim, dim_head=dim // 8, heads=8)

    def forward(self, x):
        return x + self.attn(self.norm(x))


layer = TransLayer()
layer(torch.randn(1, 10, 64)).sum().backward()
print("backward ran")
