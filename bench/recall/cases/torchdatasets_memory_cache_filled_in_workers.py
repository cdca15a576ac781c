# source: https://github.com/szymonmaszke/torchdatasets/issues/26 (code: torchdatasets/cachers.py, Memory; the cache
#   modifier of torchdatasets.Dataset)
# family: tensors crossing processes: dataset state updated in DataLoader workers
# symptom: "Using .cache() (with the default memory cacher) does nothing when the Dataset is used in a multi-process
#   DataLoader": every epoch loads every sample again, and the main process's cache stays empty
# hazard: `self.cacher[index] = sample` in the cached dataset's __getitem__, which runs in the workers
# runs-on-cpu: yes. The library's Dataset, cache wrapper and Memory cacher are written out (torchdatasets is absent from
#   the venv); a sleep stands in for the slow per-sample loading
# printed (torch 2.13): epoch 0: 0.38 s, cached in the main process: 0 / epoch 1: 0.36 s, cached in the main
#   process: 0
import time

import torch
from torch.utils.data import DataLoader


class Memory:
    def __init__(self, cache=None):
        self.cache = {} if cache is None else cache

    def __contains__(self, index):
        return index in self.cache

    def __setitem__(self, index, data):
        self.cache[index] = data

    def __getitem__(self, index):
        return self.cache[index]


class Dataset(torch.utils.data.Dataset):
    def cache(self, cacher=None):
        return _CachedDataset(self, Memory() if cacher is None else cacher)


class _CachedDataset(Dataset):
    def __init__(self, dataset, cacher):
        self.dataset = dataset
        self.cacher = cacher

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        if index in self.cacher:
            return self.cacher[index]
        sample = self.dataset[index]
        self.cacher[index] = sample  # hazard: GML206
        return sample


class SlowImages(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, index):
        time.sleep(0.02)
        return torch.full((3, 8, 8), float(index))


if __name__ == "__main__":
    dataset = SlowImages().cache()
    loader = DataLoader(dataset, batch_size=8, num_workers=2)
    for epoch in range(2):
        start = time.time()
        for batch in loader:
            pass
        print(f"epoch {epoch}: {time.time() - start:.2f} s, cached in the main process: {len(dataset.cacher.cache)}")
