# source: https://github.com/rosinality/vq-vae-2-pytorch/issues/60 (code: vqvae.py, ResBlock and Encoder)
# family: aliasing that silently changes values: a block's first layer rectifies the block's input in place
# symptom: the residual stack is meant to add the pre-activation input back (`out += input`), but the stack starts with
#   nn.ReLU(inplace=True), which overwrites `input` first, so the skip connection carries the rectified values; no
#   error, a different model (fixed in ef5f67c by making that ReLU out of place)
# hazard: `out = self.conv(input)`: the Sequential's leading ReLU(inplace=True) writes the caller's `input`, read next
# runs-on-cpu: yes. Random images stand in for the training data
# printed (torch 2.13): skip adds the pre-activation input: False / max difference: 1.04 / training step runs
#   without an error
import torch
from torch import nn


class ResBlock(nn.Module):
    def __init__(self, in_channel, channel):
        super().__init__()
        self.conv = nn.Sequential(
            nn.ReLU(inplace=True),
            nn.Conv2d(in_channel, channel, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(channel, in_channel, 1),
        )

    def forward(self, input):
        out = self.conv(input)  # hazard: GML107
        out += input
        return out


class Encoder(nn.Module):
    def __init__(self, in_channel, channel, n_res_block, n_res_channel):
        super().__init__()
        blocks = [
            nn.Conv2d(in_channel, channel // 2, 4, stride=2, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(channel // 2, channel, 3, padding=1),
        ]
        for _ in range(n_res_block):
            blocks.append(ResBlock(channel, n_res_channel))
        blocks.append(nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(*blocks)

    def forward(self, input):
        return self.blocks(input)


torch.manual_seed(0)
encoder = Encoder(3, 16, n_res_block=2, n_res_channel=8)
images = torch.randn(2, 3, 16, 16)
stem = encoder.blocks[:3](images)
first_block = encoder.blocks[3]
intended = first_block.conv(stem.clone()) + stem
actual = first_block(stem)
print("skip adds the pre-activation input:", torch.allclose(actual, intended))
print("max difference:", (actual - intended).abs().max().item())
encoder(images).mean().backward()
print("training step runs without an error")
