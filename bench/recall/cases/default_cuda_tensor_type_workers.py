# source: https://github.com/pytorch/pytorch/issues/21092
# family: CUDA in DataLoader workers
# symptom: adding torch.set_default_tensor_type('torch.cuda.FloatTensor') to the MNIST example makes
#   its DataLoader (num_workers=1 when CUDA is used) fail with "RuntimeError: CUDA error: initialization
#   error"; passing no worker kwargs avoids it
# hazard: the dataset's tensor construction, which the default type makes a CUDA tensor, in the worker
# runs-on-cpu: no (CUDA-only: static only)
import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class DigitImages(Dataset):
    # stands in for torchvision's MNIST with ToTensor(): a float tensor built per item
    def __init__(self, n):
        self.data = torch.randint(0, 256, (n, 28, 28), dtype=torch.uint8).tolist()
        self.targets = [i % 10 for i in range(n)]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        img = torch.tensor(self.data[index]).div(255.0).unsqueeze(0)  # hazard: GML205
        return img, self.targets[index]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true")
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device_id = 0
    if use_cuda:
        torch.cuda.set_device(torch.device("cuda:" + str(device_id)))
        torch.set_default_tensor_type("torch.cuda.FloatTensor")
    kwargs = {"num_workers": 1, "pin_memory": True} if use_cuda else {}
    train_loader = DataLoader(DigitImages(256), batch_size=64, shuffle=True, **kwargs)
    weight = torch.randn(10, 28 * 28)
    for data, target in train_loader:
        loss = F.cross_entropy(data.flatten(1) @ weight.t(), target.to(data.device))
        print(loss.item())


if __name__ == "__main__":
    main()
