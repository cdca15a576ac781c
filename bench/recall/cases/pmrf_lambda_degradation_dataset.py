# source: https://github.com/ohayonguy/PMRF/issues/9
# family: tensors crossing processes: pickling a lambda for spawned DataLoader workers
# symptom: inference.py on Windows fails with "AttributeError: Can't pickle local object 'main.<locals>.<lambda>'";
#   the author's fix replaces `degradation=lambda x: (x, None)` by a module-level function dummy_deg
# hazard: the lambda passed as the dataset's degradation, in main(), pickled for the spawned loader workers
# runs-on-cpu: yes (fails under the spawn start method, Windows' and macOS' default; under Linux's fork it runs)
# printed (torch 2.13): under spawn: AttributeError: Can't pickle local object 'main.<locals>.<lambda>'; under fork: torch.Size([2, 3, 16, 16])
import argparse

import torch
from torch.utils.data import DataLoader, Dataset


def to_tensor(img):
    return torch.as_tensor(img, dtype=torch.float32)


class ImageFolderDataset(Dataset):
    def __init__(self, root, degradation=None, transform=None):
        self.root = root
        self.files = [f"{root}/{i}.png" for i in range(4)]
        self.degradation = degradation
        self.transform = transform

    def __len__(self):
        return len(self.files)

    def __getitem__(self, idx):
        img = self.transform(torch.rand(3, 16, 16).numpy())
        lq, _ = self.degradation(img)
        return lq, self.files[idx]


def main(args):
    ds = ImageFolderDataset(args.lq_data_path, degradation=lambda x: (x, None), transform=to_tensor)  # hazard: GML212
    loader = DataLoader(ds, batch_size=args.batch_size, shuffle=False, num_workers=2)
    for lq, names in loader:
        print(lq.shape)
        break


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lq_data_path", default="testdata")
    parser.add_argument("--batch_size", type=int, default=2)
    main(parser.parse_args())
