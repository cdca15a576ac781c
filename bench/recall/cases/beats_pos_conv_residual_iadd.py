# source: https://github.com/microsoft/unilm/pull/999 (code: beats/backbone.py, TransformerEncoder.extract_features,
#   line 116 before the PR, and the pos_conv it builds in __init__)
# family: autograd in-place errors: a tensor saved for backward then modified
# symptom: fine-tuning BEATs: "RuntimeError: one of the variables needed for gradient computation has been modified
#   by an inplace operation: [torch.cuda.FloatTensor [32, 768, 248]]"; the PR replaces `x += x_conv` by
#   `x = x.clone() + x_conv`
# hazard: `x += x_conv` writes x, whose transpose the positional convolution saved as its input for backward
# runs-on-cpu: yes. Small sizes; a Linear stands in for BEATs' patch embedding and post-extract projection, and the
#   encoder keeps no transformer layers (the error is raised before them)
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [2, 16, 10]], which is output 0 of AsStrided, is at version 1;
#   expected version 0 instead. ...
import torch
import torch.nn as nn


class SamePad(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.remove = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        if self.remove > 0:
            x = x[:, :, : -self.remove]
        return x


class TransformerEncoder(nn.Module):
    def __init__(self, embedding_dim=16, conv_pos=4, conv_pos_groups=4):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.pos_conv = nn.Conv1d(self.embedding_dim, self.embedding_dim, kernel_size=conv_pos,
                                  padding=conv_pos // 2, groups=conv_pos_groups)
        self.pos_conv = nn.utils.weight_norm(self.pos_conv, name="weight", dim=2)
        self.pos_conv = nn.Sequential(self.pos_conv, SamePad(conv_pos), nn.GELU())
        self.layer_norm = nn.LayerNorm(self.embedding_dim)

    def extract_features(self, x, padding_mask=None, tgt_layer=None):
        if padding_mask is not None:
            x[padding_mask] = 0

        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x += x_conv  # hazard: GML109

        x = self.layer_norm(x)
        return x, []

    def forward(self, x, padding_mask=None, layer=None):
        x, layer_results = self.extract_features(x, padding_mask, layer)
        return x, layer_results


class BEATs(nn.Module):
    def __init__(self):
        super().__init__()
        self.post_extract_proj = nn.Linear(8, 16)
        self.encoder = TransformerEncoder()

    def extract_features(self, fbank):
        features = self.post_extract_proj(fbank)
        x, layer_results = self.encoder(features)
        return x


model = BEATs()
fbank = torch.randn(2, 10, 8)
out = model.extract_features(fbank)
out.mean().backward()
print(model.post_extract_proj.weight.grad.norm())
