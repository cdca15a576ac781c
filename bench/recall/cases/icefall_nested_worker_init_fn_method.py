# source: https://github.com/k2-fsa/icefall/pull/284
# family: tensors crossing processes: a worker_init_fn nested in a data-module method, pickled for spawned workers
# symptom: during DDP training the first train batch fails in the DataLoader's worker start (popen_spawn_posix, the
#   traceback shows spawn): "AttributeError: Can't pickle local object
#   'LibriSpeechAsrDataModule.train_dataloaders.<locals>.worker_init_fn'"; the fix replaces it with a module-level callable class
# hazard: `worker_init_fn=worker_init_fn` (the def nested in train_dataloaders) with num_workers > 0 under spawn
# runs-on-cpu: yes (under the spawn start method, as in the traceback; lists of tensors stand in for the lhotse cut sets)
# printed (torch 2.13): AttributeError: Can't pickle local object 'LibriSpeechAsrDataModule.train_dataloaders.<locals>.worker_init_fn' (run with multiprocessing.set_start_method("spawn"))
import random

import torch
from torch.utils.data import DataLoader, Dataset


def fix_random_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)


class K2SpeechRecognitionDataset(Dataset):
    def __init__(self, cuts):
        self.cuts = cuts

    def __len__(self):
        return len(self.cuts)

    def __getitem__(self, index):
        return {"inputs": self.cuts[index], "supervisions": index}


class LibriSpeechAsrDataModule:
    def __init__(self, num_workers=2, max_duration=4):
        self.num_workers = num_workers
        self.max_duration = max_duration

    def train_dataloaders(self, cuts_train):
        train = K2SpeechRecognitionDataset(cuts_train)
        # 'seed' is derived from the current random state, set earlier in the main process
        seed = torch.randint(0, 100000, ()).item()

        def worker_init_fn(worker_id: int):
            fix_random_seed(seed + worker_id)

        train_dl = DataLoader(
            train,
            batch_size=self.max_duration,
            shuffle=True,
            num_workers=self.num_workers,
            persistent_workers=False,
            worker_init_fn=worker_init_fn,  # hazard: GML212
        )
        return train_dl


def run(rank=0, world_size=1):
    fix_random_seed(42)
    librispeech = LibriSpeechAsrDataModule()
    cuts_train = [torch.randn(20, 80) for _ in range(16)]
    train_dl = librispeech.train_dataloaders(cuts_train)
    for batch_idx, batch in enumerate(train_dl):
        print(rank, batch_idx, batch["inputs"].shape)


if __name__ == "__main__":
    run()
