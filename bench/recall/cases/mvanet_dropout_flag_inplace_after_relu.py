# source: https://github.com/qianyu-dlut/MVANet/issues/2 (code: model/MVANet.py, MCRM.forward and MVANet.__init__, at fe48fb4)
# family: autograd in-place error on a saved tensor (an output ReLU keeps, written by a Dropout made in-place later)
# symptom: `python train.py` fails in backward: "one of the variables needed for gradient computation has been modified
#   by an inplace operation: [torch.cuda.HalfTensor [256, 1, 256]], which is output 0 of ReluBackward0"; the reporter
#   traced it to `self.activation = get_activation_fn('relu')` and the `m.inplace = True` loop; the fix adds .clone()
# hazard: `self.dropout(self.activation(self.linear1(src)))`: F.relu's output, which its backward keeps, written in
#   place by an nn.Dropout whose `inplace` the model's __init__ set to True after building it
# runs-on-cpu: yes (a small stand-in for the Swin backbone and the decoder)
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [16, 4, 32]], which is output 0 of Relu, is at version 1; expected version 0 ...
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}.")


class MCRM(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = nn.MultiheadAttention(d_model, num_heads, dropout=0.1)
        self.linear1 = nn.Linear(d_model, d_model * 2)
        self.linear2 = nn.Linear(d_model * 2, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(0.1)
        self.dropout1 = nn.Dropout(0.1)
        self.dropout2 = nn.Dropout(0.1)
        self.activation = get_activation_fn("relu")

    def forward(self, x):
        b, c, h, w = x.size()
        src = x.flatten(2).permute(2, 0, 1)
        src = src + self.dropout1(self.attention(src, src, src)[0])
        src = self.norm1(src)
        src = src + self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(src)))))  # hazard: GML109
        src = self.norm2(src)
        return src.permute(1, 2, 0).reshape(b, c, h, w)


class MVANet(nn.Module):
    def __init__(self, emb_dim=16):
        super().__init__()
        self.shallow = nn.Sequential(nn.Conv2d(3, emb_dim, kernel_size=3, padding=1))
        self.dec_blk1 = MCRM(emb_dim, 1)
        self.dec_blk2 = MCRM(emb_dim, 1)
        self.output = nn.Sequential(nn.Conv2d(emb_dim, 1, kernel_size=3, padding=1))
        for m in self.modules():
            if isinstance(m, nn.ReLU) or isinstance(m, nn.Dropout):
                m.inplace = True

    def forward(self, x):
        e = self.shallow(x)
        e = self.dec_blk2(e)
        e = self.dec_blk1(e)
        return self.output(e)


model = MVANet()
model.train()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-5)
image, gt = torch.randn(4, 3, 4, 4), torch.rand(4, 1, 4, 4)
loss = F.binary_cross_entropy_with_logits(model(image), gt)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("loss", loss.item())
