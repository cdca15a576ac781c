# source: https://github.com/pytorch/vision/issues/217 (code: torchvision/utils.py of 2017, make_grid with its nested
#   norm_ip; the fix, vision#241, adds a clone at the start)
# family: aliasing that silently changes values: a helper writes the tensor its caller passed in
# symptom: "Was using torchvision.utils.make_grid to view model weights, but turns out this function modifies the
#   input tensor in-place, causing weirdness during training"
# hazard: `img.add_(-min).div_(max - min)` in make_grid's norm_ip, on the first conv's weights handed in as
#   `model.conv1.weight.data` (three input channels, so no torch.cat copies them first)
# runs-on-cpu: yes. The 2017 make_grid is written out up to its normalisation (the grid assembly is left out); a
#   small classifier and random batches stand in for the reporter's training
# printed (torch 2.13): conv1 weight range before viewing [-0.1158, 0.1166] (loss 2.2601), after [0.0000, 1.0000]:
#   the training weights themselves were rescaled by viewing them
import torch
import torch.nn as nn
import torch.nn.functional as F


def make_grid(tensor, nrow=8, padding=2, normalize=False, range=None, scale_each=False):
    if isinstance(tensor, list):
        tensor = torch.stack(tensor, dim=0)
    if tensor.dim() == 2:
        tensor = tensor.view(1, tensor.size(0), tensor.size(1))
    if tensor.dim() == 3:
        if tensor.size(0) == 1:
            tensor = torch.cat((tensor, tensor, tensor), 0)
        return tensor
    if tensor.dim() == 4 and tensor.size(1) == 1:
        tensor = torch.cat((tensor, tensor, tensor), 1)

    if normalize is True:
        def norm_ip(img, min, max):
            img.clamp_(min=min, max=max)
            img.add_(-min).div_(max - min)  # hazard: GML107

        if scale_each is True:
            for t in tensor:
                norm_ip(t, float(t.min()), float(t.max()))
        else:
            norm_ip(tensor, float(tensor.min()), float(tensor.max()))
    return tensor


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 5)
        self.fc = nn.Linear(8 * 12 * 12, 10)

    def forward(self, x):
        return self.fc(F.relu(self.conv1(x)).flatten(1))


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 3, 16, 16), torch.randint(0, 10, (16,))
for step in range(4):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step == 1:
        w = model.conv1.weight
        print("before viewing [%.4f, %.4f]" % (w.min().item(), w.max().item()), "loss %.4f" % loss.item())
        grid = make_grid(model.conv1.weight.data, normalize=True)  # hazard-via: GML107
        print("after [%.4f, %.4f]" % (w.min().item(), w.max().item()))
print("loss %.4f" % loss.item())
