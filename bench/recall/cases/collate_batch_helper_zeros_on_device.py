# source: https://github.com/pytorch/pytorch/issues/2517 (the comment of tshrjn, 2019-05-16)
# family: tensors crossing processes: CUDA tensors made by a collate_fn that DataLoader workers run
# symptom: "CUDA error: initialization error" with a custom collate_fn and num_workers>0, raised on the line of
#   _batch_helper that allocates the padded batch with `device=self.device`; it works on CPU with workers, and on the
#   GPU with num_workers=0
# hazard: `torch.zeros((bs, max_src_len), dtype=torch.long, device=self.device)` inside the collate helper
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import torch
from torch.utils.data import DataLoader, Dataset


class AttrDataset(Dataset):
    def __init__(self, n=64):
        self.items = [torch.randint(1, 100, (int(torch.randint(3, 12, (1,))),)) for _ in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


class DataModule:
    def __init__(self, device, num_workers=4):
        self.device = device
        self.num_workers = num_workers

    def _batch_helper(self, batch):
        bs = len(batch)
        max_src_len = max(len(x) for x in batch)
        src = torch.zeros((bs, max_src_len), dtype=torch.long, device=self.device)  # hazard: GML205
        for i, x in enumerate(batch):
            src[i, : len(x)] = x.to(self.device)
        return src

    def train_loader(self, dataset):
        return DataLoader(dataset, batch_size=8, shuffle=True,
                          num_workers=self.num_workers, collate_fn=self._batch_helper)


if __name__ == "__main__":
    dm = DataModule(torch.device("cuda"))
    for src in dm.train_loader(AttrDataset()):
        print(src.shape)
