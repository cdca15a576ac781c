# source: https://github.com/ruthcfong/invert/issues/2 (code: invert.py, Denormalize, Clip and invert())
# family: aliasing that silently changes values: a helper writes the tensor its caller passed in
# symptom: "If you run your code with 0 multiplied with all the loss terms, you will still see the image gradually
#   get smoother. in the Denormalize function because the tensor is not getting cloned, it is doing the
#   multiplication by s and addition of mu in place."
# hazard: `t.mul_(s).add_(m)` in Denormalize.__call__, on rows of `x_[0].data.cpu()`, which on a CPU run is the
#   optimised image itself
# runs-on-cpu: yes. A small conv net stands in for AlexNet and a random image for grace_hopper.jpg; the loss weights
#   are 0, as in the report, and the image is shown (here: its mean printed) every print_iter steps, as the
#   report's "gradually" implies (the repository shows it once, after the loop); ToPILImage is left out
# printed (torch 2.13): mean of x_ -0.0000, then 0.4490, 0.5505, 0.5735, 0.5787 at the four displays, with every
#   loss term 0 (the image should not move)
import torch
import torch.nn as nn
from torch.autograd import Variable


class Denormalize(object):
    def __init__(self, mean, std):
        self.mean = mean
        self.std = std

    def __call__(self, tensor):
        for t, m, s in zip(tensor, self.mean, self.std):
            t.mul_(s).add_(m)  # hazard: GML107
        return tensor


class Clip(object):
    def __call__(self, tensor):
        t = tensor.clone()
        t[t > 1] = 1
        t[t < 0] = 0
        return t


def invert(img_, epochs=100, learning_rate=1e2, momentum=0.9, print_iter=25, cuda=False):
    mu = [0.485, 0.456, 0.406]
    sigma = [0.229, 0.224, 0.225]
    detransform = lambda t: Clip()(Denormalize(mu, sigma)(t))
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    ref_acts = model(img_).detach()
    x_ = Variable(1e-3 * torch.randn(*img_.size()), requires_grad=True)
    optimizer = torch.optim.SGD([x_], lr=learning_rate, momentum=momentum)
    print("mean of x_ %.4f" % x_.data.mean().item())
    for i in range(epochs):
        acts = model(x_)
        tot_loss = 0 * (acts - ref_acts).pow(2).sum() + 0 * x_.abs().sum()
        optimizer.zero_grad()
        tot_loss.backward()
        optimizer.step()
        if (i + 1) % print_iter == 0:
            shown = detransform(x_[0].data.cpu())
            print("mean of x_ %.4f" % x_.data.mean().item(), tuple(shown.shape))


torch.manual_seed(0)
invert(torch.rand(1, 3, 32, 32))
