# source: https://github.com/cfzd/Ultra-Fast-Lane-Detection-v2/issues/160
# family: tensors crossing processes: a Dataset's __getitem__ moving data to CUDA inside DataLoader workers
# symptom: using the project's `my_interp` (which needs its input on CUDA) in a custom dataset's __getitem__ with
#   `data.cuda()` raises "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with
#   multiprocessing, you must use the 'spawn' start method"
# hazard: `lanes = lanes.cuda()` in __getitem__, run by the forked loader workers
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def my_interp(points, num_rows):
    # stand-in for my_interp.run: resamples each lane at fixed rows (the project's version is a CUDA kernel)
    rows = torch.linspace(0, 1, num_rows, device=points.device)
    return torch.stack([torch.quantile(p, rows) for p in points])


class MyLaneDataset(Dataset):
    def __init__(self, samples, num_rows=18):
        self.samples = samples
        self.num_rows = num_rows

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        img, lanes = self.samples[index]
        lanes = torch.from_numpy(lanes)
        lanes = lanes.cuda()  # hazard: GML205
        lanes = my_interp(lanes, self.num_rows)
        return torch.from_numpy(img), lanes.cpu()


if __name__ == "__main__":
    samples = [(np.zeros((3, 32, 80), np.float32), np.random.rand(4, 50).astype(np.float32)) for _ in range(16)]
    loader = DataLoader(MyLaneDataset(samples), batch_size=4, shuffle=True, num_workers=4)
    for img, lanes in loader:
        print(img.shape, lanes.shape)
