# source: https://github.com/juliendenize/torchaug/issues/10
# family: in-place writes on expanded tensors / overlapping memory
# symptom: "Inplace error after expand": BatchImageWrapper([BatchRandomGrayScale(1.), Normalize(225, 225)]) applied
#   to a batch raises "unsupported operation: more than one element of the written-to tensor refers to a single memory
#   location": the grayscale transform returns an `expand`ed tensor and Normalize works in place
# hazard: Normalize's in-place `tensor.sub_(mean).div_(std)` on the expanded output of the grayscale transform
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.
import torch


def rgb_to_grayscale(imgs):
    r, g, b = imgs.unbind(dim=-3)
    return (0.2989 * r + 0.587 * g + 0.114 * b).unsqueeze(dim=-3)


class BatchRandomGrayScale:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, imgs):
        gray = rgb_to_grayscale(imgs)
        return gray.expand(imgs.shape)


class Normalize:
    def __init__(self, mean, std, inplace=True):
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, tensor):
        if not self.inplace:
            tensor = tensor.clone()
        return tensor.sub_(self.mean).div_(self.std)  # hazard: GML104


class BatchImageWrapper:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, imgs):
        for t in self.transforms:
            imgs = t(imgs)
        return imgs


transform = BatchImageWrapper([BatchRandomGrayScale(1.0), Normalize(225, 225)])
print(transform(torch.randn(4, 3, 224, 224)).shape)
