# source: https://github.com/qfgaohao/pytorch-ssd/issues/19 (code: vision/ssd/data_preprocessing.py at af2e79b,
#   TrainAugmentation; train_ssd.py; vision/datasets/voc_dataset.py)
# family: tensors crossing processes: a lambda kept by a dataset's transform, pickled for spawned DataLoader workers
# symptom: on Windows, train_ssd.py fails when the loader starts its workers: "AttributeError: Can't pickle local
#   object 'TrainAugmentation.__init__.<locals>.<lambda>'"
# hazard: the lambda in the Compose list that TrainAugmentation.__init__ stores on self.augment; the dataset keeps the
#   transform and spawned workers receive the dataset by pickling
# runs-on-cpu: yes, under spawn (the script sets it, standing in for Windows' default). Random images and boxes stand
#   in for VOC; the augmentation list is cut to the steps around the lambda; a linear head for the SSD
# printed (torch 2.13): AttributeError: Can't pickle local object 'TrainAugmentation.__init__.<locals>.<lambda>'
import numpy as np
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset


class Compose(object):
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img, boxes=None, labels=None):
        for t in self.transforms:
            img, boxes, labels = t(img, boxes, labels)
        return img, boxes, labels


class SubtractMeans(object):
    def __init__(self, mean):
        self.mean = np.array(mean, dtype=np.float32)

    def __call__(self, image, boxes=None, labels=None):
        return image.astype(np.float32) - self.mean, boxes, labels


class ToTensor(object):
    def __call__(self, cvimage, boxes=None, labels=None):
        return torch.from_numpy(cvimage.astype(np.float32)).permute(2, 0, 1), boxes, labels


class TrainAugmentation:
    def __init__(self, size, mean=0, std=1.0):
        self.mean = mean
        self.size = size
        self.augment = Compose([
            SubtractMeans(self.mean),
            lambda img, boxes=None, labels=None: (img / std, boxes, labels),  # hazard: GML212
            ToTensor(),
        ])

    def __call__(self, img, boxes, labels):
        return self.augment(img, boxes, labels)


class VOCDataset(Dataset):
    def __init__(self, n, transform=None):
        self.images = [np.random.randint(0, 255, (16, 16, 3)).astype(np.uint8) for _ in range(n)]
        self.transform = transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        boxes = np.array([[0.1, 0.1, 0.5, 0.5]], dtype=np.float32)
        labels = np.array([1])
        image, boxes, labels = self.transform(self.images[index], boxes, labels)
        return image, torch.from_numpy(boxes), torch.from_numpy(labels)


if __name__ == '__main__':
    mp.set_start_method("spawn")
    train_transform = TrainAugmentation(300, [127, 127, 127], 128.0)
    train_dataset = VOCDataset(8, transform=train_transform)
    train_loader = DataLoader(train_dataset, 4, num_workers=2, shuffle=True)
    net = torch.nn.Linear(3 * 16 * 16, 4)
    for images, boxes, labels in train_loader:
        loss = torch.nn.functional.mse_loss(net(images.flatten(1)), boxes.squeeze(1))
        loss.backward()
    print("epoch done")
