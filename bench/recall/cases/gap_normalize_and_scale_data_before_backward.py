# source: https://github.com/OmidPoursaeed/Generative_Adversarial_Perturbations/issues/4 (code: GAP_clf.py, train and normalize_and_scale)
# family: autograd: in-place write through `.data` between the forward pass and backward() (a generator's output rescaled)
# symptom: "Wrong Implementation": the perturbation the generator returns is shifted and rescaled through `delta_im.data`
#   after the forward pass and before `loss.backward()`; autograd does not see the writes, so the generator is trained
#   with a wrong gradient (the tanh backward reads its overwritten output, and the scale is not differentiated)
# hazard: `delta_im.data += 1` in normalize_and_scale, called by train between netG(...) and loss.backward()
# runs-on-cpu: yes (a two-layer generator and a linear classifier stand in for the ResNet generator and the pretrained VGG)
# printed (torch 2.13): grad through .data writes: tensor([-0.0383, -0.0109, -0.0343, -0.0172]); grad of the same values
#   computed out of place: tensor([-0.0121, -0.0017, -0.0114, -0.0063]); max abs difference 0.1167
#   (no error is raised)
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
mean_arr = [0.485, 0.456, 0.406]
stddev_arr = [0.229, 0.224, 0.225]
mag_in = 10.0


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 3, 3, padding=1)

    def forward(self, x):
        return torch.tanh(self.conv2(F.relu(self.conv1(x))))


def normalize_and_scale(delta_im):
    delta_im.data += 1  # hazard: GML101
    delta_im.data *= 0.5
    for c in range(3):
        delta_im.data[:, c, :, :] = (delta_im.data[:, c, :, :] - mean_arr[c]) / stddev_arr[c]
    for i in range(delta_im.size(0)):
        for ci in range(3):
            l_inf_channel = delta_im[i, ci, :, :].data.abs().max()
            mag_in_scaled_c = mag_in / (255.0 * stddev_arr[ci])
            delta_im[i, ci, :, :].data *= min(1.0, mag_in_scaled_c / l_inf_channel.item())
    return delta_im


def normalize_and_scale_out_of_place(delta_im):
    delta_im = (delta_im + 1) * 0.5
    mean = torch.tensor(mean_arr).view(1, 3, 1, 1)
    std = torch.tensor(stddev_arr).view(1, 3, 1, 1)
    delta_im = (delta_im - mean) / std
    limit = torch.tensor([mag_in / (255.0 * s) for s in stddev_arr]).view(1, 3, 1, 1)
    l_inf = delta_im.detach().abs().amax(dim=(2, 3), keepdim=True)
    return delta_im * torch.clamp(limit / l_inf, max=1.0)


netG = Generator()
pretrained_clf = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 10))
criterion_pre = nn.CrossEntropyLoss()
image = torch.randn(2, 3, 8, 8)
target_label = torch.tensor([3, 3])


def train_step(scale):
    netG.zero_grad()
    delta_im = netG(image)
    delta_im = scale(delta_im)
    recons = torch.add(image, delta_im)
    loss = torch.log(criterion_pre(pretrained_clf(recons), target_label))
    loss.backward()
    return netG.conv2.weight.grad.clone()


g_data = train_step(normalize_and_scale)
g_ref = train_step(normalize_and_scale_out_of_place)
print("grad through .data writes:", g_data.flatten()[:4])
print("grad of the same values computed out of place:", g_ref.flatten()[:4])
print("max abs difference:", (g_data - g_ref).abs().max().item())
