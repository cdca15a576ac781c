# source: https://github.com/orobix/fwdgrad/issues/12 (code: mnist_fwdgrad.py, train_model; configs/dataset/default.yaml)
# family: tensors crossing processes: a lambda in a dataset's transform, pickled for spawned DataLoader workers
# symptom: on the reporter's Windows machine "AttributeError: Can't pickle local object
#   'train_model.<locals>.<lambda>'" at `for i, batch in enumerate(train_loader)`; the same repository runs on Colab
# hazard: the `Lambda(lambda x: torch.flatten(x))` in the MNIST transform that train_model builds; the loader is made by
#   hydra from a config (`_target_: torch.utils.data.DataLoader`, num_workers: 8) and its spawned workers get the
#   dataset by pickling
# runs-on-cpu: yes, under spawn (the script sets it, standing in for Windows' default). torchvision and hydra are
#   absent: a small MNIST-like dataset, Compose/Lambda/ToTensor written out as torchvision has them, and `instantiate`
#   written out for a `_target_` dict (hydra.utils.instantiate)
# printed (torch 2.13): AttributeError: Can't pickle local object 'train_model.<locals>.<lambda>'
import importlib

import torch
import torch.multiprocessing as mp


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class Lambda:
    def __init__(self, lambd):
        self.lambd = lambd

    def __call__(self, x):
        return self.lambd(x)


class ToTensor:
    def __call__(self, x):
        return torch.as_tensor(x, dtype=torch.float32).unsqueeze(0) / 255


class MNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, transform=None):
        self.data = torch.randint(0, 255, (256, 28, 28))
        self.targets = torch.randint(0, 10, (256,))
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.transform(self.data[i].numpy()), self.targets[i]


def instantiate(cfg, **kwargs):
    module, name = cfg["_target_"].rsplit(".", 1)
    params = {k: v for k, v in cfg.items() if k != "_target_"}
    return getattr(importlib.import_module(module), name)(**params, **kwargs)


def train_model(cfg):
    mnist = MNIST("/tmp/data", train=True, transform=Compose(
        [ToTensor(), Lambda(lambda x: torch.flatten(x))]))  # hazard: GML212
    train_loader = instantiate(cfg["dataset"], dataset=mnist)
    for i, batch in enumerate(train_loader):
        images, labels = batch
        print(images.shape)
        break


if __name__ == "__main__":
    mp.set_start_method("spawn")
    train_model({"dataset": {"_target_": "torch.utils.data.DataLoader", "batch_size": 64, "shuffle": True,
                             "num_workers": 2, "drop_last": False}})
