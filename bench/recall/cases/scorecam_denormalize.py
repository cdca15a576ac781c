# source: https://github.com/haofanwang/Score-CAM/issues/28 (same code: https://github.com/MisaOgura/flashtorch/issues/45)
# family: autograd in-place error on a multi-output view (unbind)
# symptom: basic_visualize(...) -> denormalize -> channel.mul_(std).add_(mean) raises
#   "Output 0 of UnbindBackward0 is a view and is being modified inplace"
# hazard: the in-place mul_ on each channel of `denormalized[0]` (the input required grad)
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: Output 0 of Unbind is a view and is being modified inplace. ...
import torch

MEANS = [0.485, 0.456, 0.406]
STDS = [0.229, 0.224, 0.225]


def prepare(image):
    # like apply_transforms: a batch of one image, marked for saliency gradients
    tensor = ((image - torch.tensor(MEANS).view(3, 1, 1)) / torch.tensor(STDS).view(3, 1, 1)).unsqueeze(0)
    tensor.requires_grad = True
    return tensor


def denormalize(tensor):
    denormalized = tensor.clone()
    for channel, mean, std in zip(denormalized[0], MEANS, STDS):
        channel.mul_(std).add_(mean)  # hazard: GML105
    return denormalized


def format_for_plotting(tensor):
    return tensor.squeeze(0).permute(1, 2, 0).detach()


def basic_visualize(input_, saliency_map):
    shown = format_for_plotting(denormalize(input_))  # hazard-via: GML105
    return shown * saliency_map.unsqueeze(-1)


input_ = prepare(torch.rand(3, 8, 8))
cam = torch.rand(8, 8)
print(basic_visualize(input_.cpu(), cam.type(torch.FloatTensor).cpu()).shape)  # hazard-via: GML105
