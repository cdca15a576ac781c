# source: https://github.com/pytorch/pytorch/issues/5687
# family: autograd in-place error on a saved tensor (the output an in-place ReLU keeps, then `out += residual`)
# symptom: with nn.ReLU(inplace=True) the model "can not be trained, and its loss goes to hundreds of thousands after a
#   few iterations"; with ReLU(inplace=False) it converges (the torch of the report raised nothing)
# hazard: `out += residual` on the output of self.left, whose last layer is nn.ReLU(inplace=True)
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [2, 8, 6, 6]], which is output 0 of Relu, is at version 2; expected version 1 ...
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResidualBlock(nn.Module):
    def __init__(self, ch_in, ch_out, shortcut=None):
        super().__init__()
        self.left = nn.Sequential(
            nn.Conv2d(ch_in, 16, 3, 1, 1),
            nn.ReLU(inplace=True),
            nn.Conv2d(16, ch_out, 3, 1, 1),
            nn.ReLU(inplace=True),
        )
        self.right = shortcut

    def forward(self, x):
        out = self.left(x)
        residual = x if self.right is None else self.right(x)
        out += residual  # hazard: GML109
        return F.relu(out, inplace=False)


class ContentWeightedCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(3, 8, 3, 1, 1)
        self.blocks = nn.Sequential(ResidualBlock(8, 8), ResidualBlock(8, 8))
        self.tail = nn.Conv2d(8, 3, 3, 1, 1)

    def forward(self, x):
        return self.tail(self.blocks(self.head(x)))


model = ContentWeightedCNN()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    img = torch.randn(2, 3, 6, 6)
    loss = F.mse_loss(model(img), img)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
