# source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/1197 (code: data/base_dataset.py
#   get_transform, data/unaligned_dataset.py, data/__init__.py CustomDatasetDataLoader, train.py; also #1485)
# family: tensors crossing processes: a lambda in a dataset's transform, pickled for spawned DataLoader workers
# symptom: with `--preprocess none` on Windows, train.py fails at `for i, data in enumerate(dataset)`:
#   "AttributeError: Can't pickle local object 'get_transform.<locals>.<lambda>'"
# hazard: the `transforms.Lambda(lambda img: __make_power_2(...))` that get_transform appends for preprocess 'none';
#   the dataset's __init__ keeps the Compose and the loader's spawned workers receive the dataset by pickling
# runs-on-cpu: yes, under spawn (the script sets it, standing in for Windows' default). torchvision and PIL are
#   absent: Compose/Lambda written out as torchvision has them, arrays for images, an options namespace for opt
# printed (torch 2.13): AttributeError: Can't pickle local object 'get_transform.<locals>.<lambda>'
from types import SimpleNamespace

import numpy as np
import torch
import torch.multiprocessing as mp
import torch.utils.data


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class Lambda:
    def __init__(self, lambd):
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)


def __make_power_2(img, base, method=None):
    h, w = img.shape[:2]
    return img[: h // base * base, : w // base * base]


def get_transform(opt, params=None, grayscale=False, method=None, convert=True):
    transform_list = []
    if opt.preprocess == "none":
        transform_list.append(Lambda(lambda img: __make_power_2(img, base=4, method=method)))  # hazard: GML212
    if convert:
        transform_list.append(Lambda(torch.from_numpy))
    return Compose(transform_list)


class UnalignedDataset(torch.utils.data.Dataset):
    def __init__(self, opt):
        self.A = [np.random.rand(30, 30, 3).astype(np.float32) for _ in range(8)]
        self.transform_A = get_transform(opt, grayscale=(opt.input_nc == 1))

    def __getitem__(self, index):
        return {"A": self.transform_A(self.A[index])}

    def __len__(self):
        return len(self.A)


class CustomDatasetDataLoader:
    def __init__(self, opt):
        self.dataset = UnalignedDataset(opt)
        self.dataloader = torch.utils.data.DataLoader(self.dataset, batch_size=opt.batch_size,
                                                      shuffle=not opt.serial_batches, num_workers=int(opt.num_threads))

    def __iter__(self):
        for data in self.dataloader:
            yield data


if __name__ == "__main__":
    mp.set_start_method("spawn")
    opt = SimpleNamespace(preprocess="none", input_nc=3, batch_size=1, serial_batches=False, num_threads=2)
    dataset = CustomDatasetDataLoader(opt)
    for i, data in enumerate(dataset):
        print(data["A"].shape)
        break
