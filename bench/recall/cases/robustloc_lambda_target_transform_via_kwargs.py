# source: https://github.com/sijieaaa/RobustLoc/issues/3 (code: train.py, main)
# family: tensors crossing processes: a lambda inside a transform the dataset keeps, pickled for spawned workers
# symptom: on Windows, `tqdm(enumerate(train_loader))` fails with "AttributeError: Can't pickle local object
#   'main.<locals>.<lambda>'" (popen_spawn_win32, ForkingPickler.dump)
# hazard: the lambda in `transforms.Lambda(...)`, given as target_transform through a kwargs dict to the dataset that
#   a DataLoader with num_workers (also from a kwargs dict) hands to spawned workers
# runs-on-cpu: no (needs torchvision, absent from the venv, and the RobotCar data). A small Dataset stands in for
#   data.dataloaders.RobotCar and for the Options parser
import os

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


class Options:
    def parse(self):
        self.cuda, self.nThreads, self.batchsize, self.color_jitter = 0, 4, 16, 0.7
        return self


class RobotCar(Dataset):
    def __init__(self, scene, data_path, train, transform=None, target_transform=None, seed=7, subseq_length=3):
        self.poses = np.random.rand(100, 6).astype(np.float32)
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.poses)

    def __getitem__(self, index):
        image = np.random.randint(0, 255, (64, 64, 3), dtype=np.uint8)
        return self.transform(image), self.target_transform(self.poses[index])


opt = Options().parse()
os.environ["CUDA_VISIBLE_DEVICES"] = str(opt.cuda)


def main():
    cuda = torch.cuda.is_available()
    tforms = []
    if opt.color_jitter > 0:
        tforms.append(transforms.ColorJitter(brightness=opt.color_jitter, contrast=opt.color_jitter))
    tforms.append(transforms.ToTensor())
    data_transform = transforms.Compose(tforms)
    target_transform = transforms.Lambda(lambda x: torch.from_numpy(x).float())  # hazard: GML212

    kwargs = dict(scene="loop", data_path="./data", transform=data_transform, target_transform=target_transform)
    train_set = RobotCar(train=True, **kwargs)
    kwargs = {"num_workers": opt.nThreads, "pin_memory": True} if cuda else {}
    train_loader = DataLoader(train_set, batch_size=opt.batchsize, shuffle=True, **kwargs)
    for batch_idx, (data, target) in enumerate(train_loader):
        print(batch_idx, data.shape, target.shape)


if __name__ == "__main__":
    main()
