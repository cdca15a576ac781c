# source: https://github.com/arnoweng/CheXNet/issues/5 (code: model.py, main(), the test transform and test_loader)
# family: tensors crossing processes: a lambda pickled for spawned DataLoader workers
# symptom: "Can't pickle local object" on Windows 7 at `for i, (inp, target) in enumerate(test_loader)`; a later
#   comment gives the name: "AttributeError: Can't pickle local object 'main.<locals>.<lambda>'" (it runs on Ubuntu)
# hazard: the two `transforms.Lambda(lambda crops: ...)` of main's TenCrop pipeline, pickled with the dataset for
#   the 8 workers that Windows starts with spawn
# runs-on-cpu: yes, with spawn set as Windows does. Small stand-ins replace torchvision's Compose, Lambda, Resize,
#   TenCrop, ToTensor and Normalize, ChestXrayDataSet's image files and the DenseNet121 (on the CPU)
# printed (torch 2.13): AttributeError: Can't pickle local object 'main.<locals>.<lambda>'
import types

import numpy as np
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset

N_CLASSES = 14
BATCH_SIZE = 4


class Compose:  # torchvision.transforms stand-ins, reduced to what main uses
    def __init__(self, ts):
        self.ts = ts

    def __call__(self, x):
        for t in self.ts:
            x = t(x)
        return x


class Lambda(Compose):
    def __call__(self, x):
        return self.ts(x)


class TenCrop(Compose):
    def __call__(self, img):
        return [img[:self.ts, :self.ts]] * 10


class ToTensor:
    def __call__(self, a):
        return torch.from_numpy(a).permute(2, 0, 1)


class Normalize(Compose):
    def __call__(self, t):
        return t - torch.tensor(self.ts)[:, None, None]


transforms = types.SimpleNamespace(Compose=Compose, Lambda=Lambda, TenCrop=TenCrop, ToTensor=ToTensor,
                                   Normalize=lambda mean, std: Normalize(mean))


class ChestXrayDataSet(Dataset):
    def __init__(self, n, transform=None):
        self.n, self.transform = n, transform

    def __getitem__(self, index):
        return self.transform(np.random.rand(256, 256, 3).astype(np.float32)), torch.zeros(N_CLASSES)

    def __len__(self):
        return self.n


def main():
    model = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(3, N_CLASSES))
    normalize = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    test_dataset = ChestXrayDataSet(16, transform=transforms.Compose([
        transforms.TenCrop(224),
        transforms.Lambda(lambda crops: torch.stack([transforms.ToTensor()(crop) for crop in crops])),  # hazard: GML212
        transforms.Lambda(lambda crops: torch.stack([normalize(crop) for crop in crops]))
    ]))
    test_loader = DataLoader(dataset=test_dataset, batch_size=BATCH_SIZE, shuffle=False, num_workers=8)
    model.eval()
    for i, (inp, target) in enumerate(test_loader):
        bs, n_crops, c, h, w = inp.size()
        output = model(inp.view(-1, c, h, w)).view(bs, n_crops, -1).mean(1)
    print(output.shape)


if __name__ == '__main__':
    mp.set_start_method("spawn")
    main()
