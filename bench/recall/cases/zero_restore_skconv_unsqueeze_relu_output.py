# source: https://github.com/aupendu/zero-restore/issues/7 (code: model/watermodel.py, InConv and SKConv)
# family: autograd in-place errors: a saved tensor changed in place (a layout op on a ReLU's output)
# symptom: running watermodel.py fails with "RuntimeError: one of the variables needed for gradient computation has
#   been modified by an inplace operation", also with every ReLU set to inplace=False; the author's answer: "Add
#   .clone() in SKCov Layer's forward pass"
# hazard: `conv(x).unsqueeze_(dim=1)` in SKConv.forward: for the first branch, conv is InConv, whose output is the
#   ReLU's output in convf, which ReLU saved for its backward
# runs-on-cpu: yes. A random image stands in for the underwater input, a mean for the zero-shot losses; the
#   Upsample branches and the rest of estimation are left out
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [1, 64, 8, 8]], which is output 0 of Relu, is at version 1; expected
#   version 0 instead. ...
import torch
import torch.nn as nn


class InConv(nn.Module):
    def __init__(self, in_ch, out_ch):
        super(InConv, self).__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 64, 7, stride=4, padding=3, bias=False, padding_mode='reflect'),
            nn.GroupNorm(num_channels=64, num_groups=8, affine=True),
            nn.ReLU(inplace=False)
        )
        self.convf = nn.Sequential(
            nn.Conv2d(64, 64, 3, padding=1, bias=False, padding_mode='reflect'),
            nn.GroupNorm(num_channels=64, num_groups=8, affine=True),
            nn.ReLU(inplace=False)
        )

    def forward(self, x):
        xR = torch.unsqueeze(self.conv(x[:, 0:1, :, :]), 1)
        xG = torch.unsqueeze(self.conv(x[:, 1:2, :, :]), 1)
        xB = torch.unsqueeze(self.conv(x[:, 2:3, :, :]), 1)
        x = torch.cat([xR, xG, xB], 1)
        x, _ = torch.min(x, dim=1)
        return self.convf(x)


class SKConv(nn.Module):
    def __init__(self, outfeatures=64, infeatures=1, M=1, L=32):
        super(SKConv, self).__init__()
        self.convs = nn.ModuleList([InConv(in_ch=infeatures, out_ch=outfeatures)])
        self.fc = nn.Linear(outfeatures, L)
        self.fcs = nn.ModuleList([nn.Linear(L, outfeatures) for _ in range(M)])
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        for i, conv in enumerate(self.convs):
            fea = conv(x).unsqueeze_(dim=1)  # hazard: GML109
            feas = fea if i == 0 else torch.cat([feas, fea], dim=1)
        fea_U = torch.sum(feas, dim=1)
        fea_z = self.fc(fea_U.mean(-1).mean(-1))
        for i, fc in enumerate(self.fcs):
            vector = fc(fea_z).unsqueeze_(dim=1)
            attention_vectors = vector if i == 0 else torch.cat([attention_vectors, vector], dim=1)
        attention_vectors = self.softmax(attention_vectors).unsqueeze(-1).unsqueeze(-1)
        return (feas * attention_vectors).sum(dim=1)


sk = SKConv()
image = torch.rand(1, 3, 32, 32)
xmin = sk(image)
loss = xmin.mean()
loss.backward()
print("backward done")
