# source: https://github.com/edongdongchen/DDN/issues/4 (code: data.py, CVDB and rgb2ycbcr, and sr_test.py, which
#   loads the ground-truth image through it)
# family: tensors crossing processes: an unpicklable callable for spawned DataLoader workers
# symptom: on Windows, `python sr_test.py`: "for data in dataloader: ... reduction.dump(process_obj, to_child) ...
#   Can't pickle local object 'CVDB.<locals>.transform_center_crop'"
# hazard: `transform=transform_center_crop`, a function defined inside CVDB, handed to the dataset that CVDB's
#   DataLoader (num_workers=1) pickles for its spawned worker
# runs-on-cpu: yes, under spawn (Windows' start method; the case sets it). A small ImageFolder stand-in with random
#   HxWx3 arrays replaces torchvision's ImageFolder and PIL images; CenterCrop and ToTensor are written as slicing
#   and torch.from_numpy
# printed (torch 2.13): AttributeError: Can't pickle local object 'CVDB.<locals>.transform_center_crop'
import numpy as np
import torch
import torch.multiprocessing as mp
from torch.utils.data import Dataset


def rgb2ycbcr(img, only_y=True):
    in_img_type = img.dtype
    img.astype(np.float32)
    if in_img_type != np.uint8:
        img *= 255.
    if only_y:
        rlt = np.dot(img, [65.481, 128.553, 24.966]) / 255.0 + 16.0
    else:
        rlt = np.matmul(img, [[65.481, -37.797, 112.0], [128.553, -74.203, -93.786],
                              [24.966, 112.0, -18.214]]) / 255.0 + [16, 128, 128]
    if in_img_type == np.uint8:
        rlt = rlt.round()
    else:
        rlt /= 255.
    return rlt.astype(in_img_type)


class ImageFolder(Dataset):
    def __init__(self, root, transform=None, target_transform=None):
        self.root = root
        self.transform = transform
        self.target_transform = target_transform
        self.samples = [(np.random.rand(80, 96, 3).astype(np.float32), 0) for _ in range(2)]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        img, target = self.samples[index]
        if self.transform is not None:
            img = self.transform(img)
        return img, target


def CVDB(dataset_name='Set1', batch_size=5, shuffle=True, crop_size=(64, 64)):
    imgs_path = 'dataset/' + dataset_name

    def transform_center_crop(img):
        (h, w) = img.shape[:2]
        if crop_size is None:
            crop_size_ = (h - np.mod(h, 32), w - np.mod(w, 32))
        else:
            crop_size_ = crop_size
        top, left = (h - crop_size_[0]) // 2, (w - crop_size_[1]) // 2
        ar = img[top:top + crop_size_[0], left:left + crop_size_[1]]
        ar = ar.transpose(2, 0, 1)
        x = rgb2ycbcr(ar.transpose(1, 2, 0), only_y=False)
        x = torch.from_numpy(x.transpose(2, 0, 1).copy())
        return x  # (HR)

    dataset = ImageFolder(imgs_path,
                          transform=transform_center_crop,  # hazard: GML212
                          target_transform=None)
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, num_workers=1)
    return dataloader


if __name__ == '__main__':
    mp.set_start_method('spawn')
    # init groundtruth HR
    dataloader = CVDB('Set1', batch_size=1, shuffle=False, crop_size=None)
    for data in dataloader:
        x = data[0]
        break
    print(x.shape)
