# source: https://github.com/pytorch/vision/issues/3025 (also https://github.com/pytorch/pytorch/issues/48149)
# family: autograd in-place error on a multi-output view (unbind)
# symptom: visualising conv kernels with make_grid(normalize=True, scale_each=True) raises
#   "Output 0 of UnbindBackward0 is a view and is being modified inplace"
# hazard: the clamp_ in the per-image normaliser, reached through `for img in batch`
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: Output 0 of Unbind is a view and is being modified inplace. ...
import torch
import torch.nn as nn


def grid_of(batch, normalize=False, scale_each=False, value_range=None):
    # stands in for torchvision.utils.make_grid's normalisation step
    if normalize:
        batch = batch.clone()

        def rescale(img, low, high):
            img.clamp_(min=low, max=high)  # hazard: GML105
            img.sub_(low).div_(max(high - low, 1e-5))

        def rescale_to(img, bounds):
            if bounds is not None:
                rescale(img, bounds[0], bounds[1])  # hazard-via: GML105
            else:
                rescale(img, float(img.min()), float(img.max()))  # hazard-via: GML105

        if scale_each:
            for img in batch:
                rescale_to(img, value_range)  # hazard-via: GML105
        else:
            rescale_to(batch, value_range)
    return torch.cat(list(batch), dim=-1)


net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 2, 3))
for layer in net.modules():
    if isinstance(layer, nn.Conv2d):
        kernels = layer.weight
        for out_idx in range(kernels.shape[0]):
            one_kernel = kernels[out_idx, :, :, :].unsqueeze(1)
            picture = grid_of(one_kernel, normalize=True, scale_each=True)
print("grid", picture.shape)
