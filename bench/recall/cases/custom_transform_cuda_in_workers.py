# source: https://github.com/pytorch/pytorch/issues/20260
# family: CUDA in DataLoader workers
# symptom: a custom transform that does its heavy preprocessing on the GPU raises "RuntimeError: CUDA
#   error: initialization error" at its tensor.cuda() whenever num_workers > 0
# hazard: the .cuda() inside the transform, which the dataset's __getitem__ runs in each worker
# runs-on-cpu: no (CUDA-only: static only)
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class GpuDenoise:
    def __init__(self, kernel_size=5):
        self.kernel = torch.ones(1, 1, kernel_size, kernel_size) / kernel_size ** 2

    def __call__(self, img):
        img = img.cuda()  # hazard: GML205
        smoothed = F.conv2d(img.unsqueeze(0), self.kernel.cuda(), padding=self.kernel.shape[-1] // 2)
        return smoothed.squeeze(0).cpu()


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class ScanDataset(Dataset):
    def __init__(self, n, transform=None):
        self.scans = [torch.rand(1, 32, 32) for _ in range(n)]
        self.transform = transform

    def __len__(self):
        return len(self.scans)

    def __getitem__(self, index):
        scan = self.scans[index]
        if self.transform is not None:
            scan = self.transform(scan)
        return scan


if __name__ == "__main__":
    data = ScanDataset(16, transform=Compose([GpuDenoise()]))
    for batch in DataLoader(data, batch_size=4, num_workers=2):
        print(batch.shape)
