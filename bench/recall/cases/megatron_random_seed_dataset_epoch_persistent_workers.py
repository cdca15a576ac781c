# source: https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/5762 (code: megatron/bridge/data/samplers.py,
#   RandomSeedDataset and MegatronPretrainingRandomSampler; the cyclic loader's DataLoader)
# family: tensors crossing processes: dataset state updated in the main process after persistent workers copied it
# symptom: "fix(data): propagate cyclic epochs to workers": with a RandomSeedDataset, the cyclic loader and
#   num_workers > 0, later epochs update the seed only in the parent process; persistent workers repeat epoch 0's
#   stochastic preprocessing indefinitely
# hazard: `self.dataset.set_epoch(self.epoch)` in the sampler's __iter__, run in the main process while the persistent
#   workers keep the copy of the dataset they started with
# runs-on-cpu: yes. A dataset of random augmentations (torch.rand after the seed is set) stands in for the provider's
#   dataset; the data-parallel sharding is left out (one rank)
# printed (torch 2.13): epoch 0: [0.029, 0.1632, 0.0477, 0.1837, 0.4551, 0.5761] / epoch 1: the same six values
#   (with num_workers=0 epoch 1 gives [0.1632, ..., 0.9032], the seeds of epoch 1)
import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class AugmentedDataset(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, idx):
        return torch.rand(1)  # a random crop / noise draw


class RandomSeedDataset(Dataset):
    def __init__(self, dataset, seed):
        self.base_seed = seed
        self.curr_seed = seed
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def set_epoch(self, epoch):
        self.curr_seed = self.base_seed + epoch

    def __getitem__(self, idx):
        seed = idx + self.curr_seed
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed)
        return self.dataset[idx]


class MegatronPretrainingRandomSampler:
    def __init__(self, dataset, total_samples, consumed_samples, micro_batch_size):
        self.dataset = dataset
        self.total_samples = total_samples
        self.consumed_samples = consumed_samples
        self.micro_batch_size = micro_batch_size

    def __len__(self):
        return self.total_samples

    def __iter__(self):
        self.epoch = self.consumed_samples // self.total_samples
        if isinstance(self.dataset, RandomSeedDataset):
            self.dataset.set_epoch(self.epoch)  # hazard: GML210
        batch = []
        for idx in range(self.total_samples):
            batch.append(idx)
            if len(batch) == self.micro_batch_size:
                self.consumed_samples += self.micro_batch_size
                yield batch
                batch = []


def build_pretraining_data_loader(dataset, consumed_samples, num_workers):
    batch_sampler = MegatronPretrainingRandomSampler(dataset, len(dataset), consumed_samples, micro_batch_size=2)
    return DataLoader(dataset, batch_sampler=batch_sampler, num_workers=num_workers, pin_memory=False,
                      persistent_workers=True if num_workers > 0 else False)


if __name__ == "__main__":
    train_ds = RandomSeedDataset(AugmentedDataset(), seed=1234)
    loader = build_pretraining_data_loader(train_ds, consumed_samples=0, num_workers=2)
    for epoch in range(2):
        values = [round(v.item(), 4) for batch in loader for v in batch.flatten()]
        print("epoch %d:" % epoch, values)
