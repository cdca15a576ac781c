# source: https://github.com/pytorch/vision/issues/680 (and the StackOverflow question it answers, 53652015)
# family: aliasing that silently changes values: a numpy bridge written in place by a transform
# symptom: with the data held in RAM as float arrays, `ToTensor` returned a tensor sharing the array's memory and
#   `Normalize` worked in place, so "as training progresses, the dataset becomes more and more normalized": the
#   validation error rose epoch after epoch
# hazard: `t.sub_(m).div_(s)` in Normalize: the tensor is `torch.from_numpy` of the dataset's array, read next epoch
# runs-on-cpu: yes. The two transforms are torchvision 0.2.1's, written out (torchvision is absent from the venv, and
#   today's Normalize is out of place); random arrays stand in for the in-memory MNIST images
# printed (torch 2.13): epoch 0 mean of the stored images: 1.197 / epoch 1: 3.462 / epoch 2: 10.811
#   (the arrays start with mean 0.5)
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class ToTensor:
    def __call__(self, pic):
        img = torch.from_numpy(pic.transpose((2, 0, 1)))
        if isinstance(img, torch.ByteTensor):
            return img.float().div(255)
        return img


class Normalize:
    def __init__(self, mean, std):
        self.mean = mean
        self.std = std

    def __call__(self, tensor):
        for t, m, s in zip(tensor, self.mean, self.std):
            t.sub_(m).div_(s)  # hazard: GML106
        return tensor


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class InMemoryDataset(Dataset):
    def __init__(self, images, labels, transform):
        self.images = images
        self.labels = labels
        self.transform = transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return self.transform(self.images[index]), self.labels[index]


images = [np.random.rand(28, 28, 1).astype(np.float32) for _ in range(64)]
labels = np.random.randint(0, 10, 64)
transform = Compose([ToTensor(), Normalize((0.1307,), (0.3081,))])
loader = DataLoader(InMemoryDataset(images, labels, transform), batch_size=16, shuffle=True)
for epoch in range(3):
    for batch, target in loader:
        pass
    print("epoch", epoch, "mean of the stored images:", float(np.mean(images)))
