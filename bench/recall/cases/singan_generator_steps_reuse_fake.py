# source: https://github.com/tamarott/SinGAN/issues/110 (code: SinGAN/training.py, train_single_scale)
# family: autograd in-place errors: an optimizer step before a backward through the same graph
# symptom: "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace
#   operation: [torch.FloatTensor [3, 32, 3, 3]] is at version 2; expected version 1 instead" (a generator conv
#   weight); the repo asks for torch 1.4
# hazard: `optimizerG.step()` inside the Gsteps loop: the next step's `errG.backward` runs through netG's graph of
#   `fake`, computed before the loop, whose saved weights the step changed
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [3, 32, 3, 3]] is at version 2; expected version 1 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).
import torch
import torch.nn as nn
import torch.optim as optim


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(3, 32, 3, padding=1)
        self.tail = nn.Conv2d(32, 3, 3, padding=1)

    def forward(self, noise, prev):
        return self.tail(torch.relu(self.head(noise))) + prev


def train_single_scale(netD, netG, real, opt):
    optimizerD = optim.Adam(netD.parameters(), lr=opt["lr_d"], betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=opt["lr_g"], betas=(0.5, 0.999))
    for epoch in range(opt["niter"]):
        noise = torch.randn_like(real)
        prev = torch.zeros_like(real)
        for j in range(opt["Dsteps"]):
            netD.zero_grad()
            errD_real = -netD(real).mean()
            errD_real.backward(retain_graph=True)
            fake = netG(noise.detach(), prev)
            errD_fake = netD(fake.detach()).mean()
            errD_fake.backward(retain_graph=True)
            optimizerD.step()
        for j in range(opt["Gsteps"]):
            netG.zero_grad()
            output = netD(fake)
            errG = -output.mean()
            errG.backward(retain_graph=True)
            optimizerG.step()  # hazard: GML109
        print(epoch, errG.item())


netD = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(32, 1, 3, padding=1))
train_single_scale(netD, Generator(), torch.randn(1, 3, 25, 25),
                   {"lr_d": 5e-4, "lr_g": 5e-4, "niter": 2, "Dsteps": 3, "Gsteps": 3})
