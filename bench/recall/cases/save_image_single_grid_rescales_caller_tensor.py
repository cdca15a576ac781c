# source: https://github.com/pytorch/vision/issues/1206 (code: torchvision/utils.py 0.4, make_grid and save_image)
# family: aliasing that silently changes values: a helper writes (a view of) the tensor its caller passed in
# symptom: "torch.utils.save_image modifying the original tensor": after saving a generated image its values are
#   multiplied by 255; the maintainer: a corner case in make_grid, which for a single image returns a view, not a
#   copy, and save_image's first `mul_` writes it; fix: `mul` instead of `mul_`
# hazard: `grid.mul_(255)` in save_image, where grid is make_grid's `tensor.squeeze()` of the caller's image
# runs-on-cpu: yes. The venv has neither torchvision nor PIL: make_grid (its single-image path) and save_image are
#   written out as torchvision 0.4 had them, np.save stands in for Image.fromarray(...).save
# printed (torch 2.13): max before save: 1.00 / max after save: 254.75
import os
import tempfile

import numpy as np
import torch


def make_grid(tensor, nrow=8, padding=2, normalize=False, range=None, scale_each=False, pad_value=0):
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.size(0) == 1:
            tensor = torch.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:
        tensor = torch.cat((tensor, tensor, tensor), 1)
    if normalize is True:
        tensor = tensor.clone()
    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    raise NotImplementedError("the grid of several images is left out of this case")


def save_image(tensor, filename, nrow=8, padding=2, normalize=False, range=None, scale_each=False, pad_value=0):
    grid = make_grid(tensor, nrow=nrow, padding=padding, pad_value=pad_value, normalize=normalize, range=range,
                     scale_each=scale_each)
    ndarr = grid.mul_(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to('cpu', torch.uint8).numpy()  # hazard: GML107
    np.save(filename, ndarr)


torch.manual_seed(0)
fake = torch.rand(3, 8, 8)  # a generated image in [0, 1]
print("max before save: %.2f" % fake.max().item())
save_image(fake, os.path.join(tempfile.mkdtemp(), "fake_0.npy"))
print("max after save: %.2f" % fake.max().item())
