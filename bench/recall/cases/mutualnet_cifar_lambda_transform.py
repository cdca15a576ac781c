# source: https://github.com/taoyang1122/MutualNet/issues/5 (code: utils/datasets.py, get_cifar)
# family: tensors crossing processes: pickling a lambda for spawned DataLoader workers
# symptom: training on Windows fails in ComputePostBN.py at `enumerate(postloader)` with "AttributeError: Can't
#   pickle local object 'get_cifar.<locals>.<lambda>'" (popen_spawn_win32, ForkingPickler.dump)
# hazard: the lambda in transforms.Lambda inside get_cifar's train_transform, reaching the spawned workers inside
#   the CIFAR dataset the loader pickles
# runs-on-cpu: no (needs torchvision, absent from the venv, and the CIFAR download)
# printed (torch 2.13): - (not run)
import torch
import torch.nn.functional as F
from torchvision import datasets, transforms


class FLAGS:
    dataset = 'cifar10'
    batch_size = 64
    resolution_list = [32, 28, 24]


class InputList(object):
    def __init__(self, scales):
        self.scales = scales

    def __call__(self, img):
        return [F.interpolate(img.unsqueeze(0), size=s, mode='bilinear', align_corners=False).squeeze(0)
                for s in self.scales]


def get_cifar():
    normalize = transforms.Normalize(mean=[x / 255.0 for x in [125.3, 123.0, 113.9]],
                                     std=[x / 255.0 for x in [63.0, 62.1, 66.7]])
    train_transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Lambda(lambda x: F.pad(x.unsqueeze(0),  # hazard: GML212
                                          (4, 4, 4, 4), mode='reflect').squeeze()),
        transforms.ToPILImage(),
        transforms.RandomCrop(32),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        normalize,
        InputList(FLAGS.resolution_list)
    ])
    test_transform = transforms.Compose([
        transforms.ToTensor(),
        normalize
    ])
    kwargs = {'num_workers': 1, 'pin_memory': True}
    train_loader = torch.utils.data.DataLoader(
        datasets.__dict__[FLAGS.dataset.upper()]('../data', train=True, download=True,
                                                transform=train_transform),
        batch_size=FLAGS.batch_size, shuffle=True, **kwargs)
    val_loader = torch.utils.data.DataLoader(
        datasets.__dict__[FLAGS.dataset.upper()]('../data', train=False, transform=test_transform),
        batch_size=FLAGS.batch_size, shuffle=True, **kwargs)
    return train_loader, val_loader


if __name__ == '__main__':
    postloader, _ = get_cifar()
    for batch_idx, (inputs, targets) in enumerate(postloader):
        print(batch_idx, [x.shape for x in inputs])
        break
