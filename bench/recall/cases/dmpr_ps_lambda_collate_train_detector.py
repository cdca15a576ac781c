# source: https://github.com/Teoge/DMPR-PS/issues/17 (code: train.py, train_detector)
# family: tensors crossing processes: pickling a lambda for spawned DataLoader workers
# symptom: training stops with "AttributeError: Can't pickle local object 'train_detector.<locals>.<lambda>'" at
#   the DataLoader of train.py lines 73-79; the author asks whether it ran on Windows and suggests replacing the
#   lambda by a function or setting num_workers to 0
# hazard: `collate_fn=lambda x: list(zip(*x))` in train_detector, pickled for the spawned loader workers
# runs-on-cpu: yes (fails under the spawn start method, Windows' and macOS' default; under Linux's fork it runs)
# printed (torch 2.13): under spawn: AttributeError: Can't pickle local object 'train_detector.<locals>.<lambda>'; under fork: 0 0 torch.Size([4, 3, 64, 64]), 0 1 ...
import argparse

import torch
from torch.utils.data import DataLoader, Dataset


class ParkingSlotDataset(Dataset):
    """Stands in for data.ParkingSlotDataset: an image and its marking points."""

    def __init__(self, root):
        self.root = root

    def __getitem__(self, index):
        return torch.rand(3, 64, 64), [(0.5, 0.5, 0.0, 1.0)]

    def __len__(self):
        return 8


def train_detector(args):
    """Train directional point detector."""
    args.cuda = not args.disable_cuda and torch.cuda.is_available()
    device = torch.device('cuda:' + str(args.gpu_id) if args.cuda else 'cpu')
    torch.set_grad_enabled(True)

    data_loader = DataLoader(ParkingSlotDataset(args.dataset_directory),
                             batch_size=args.batch_size, shuffle=True,
                             num_workers=args.data_loading_workers,
                             collate_fn=lambda x: list(zip(*x)))  # hazard: GML212

    for epoch_idx in range(args.num_epochs):
        for iter_idx, (images, marking_points) in enumerate(data_loader):
            images = torch.stack(images).to(device)
            print(epoch_idx, iter_idx, images.shape)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--dataset_directory', default='data')
    parser.add_argument('--batch_size', type=int, default=4)
    parser.add_argument('--data_loading_workers', type=int, default=2)
    parser.add_argument('--num_epochs', type=int, default=1)
    parser.add_argument('--gpu_id', type=int, default=0)
    parser.add_argument('--disable_cuda', action='store_true')
    train_detector(parser.parse_args())
