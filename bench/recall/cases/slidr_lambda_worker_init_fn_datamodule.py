# source: https://github.com/valeoai/SLidR/issues/31 (code: pretrain/lightning_datamodule.py, PretrainDataModule.train_dataloader)
# family: tensors crossing processes: a lambda worker_init_fn returned from a data module's train_dataloader, under spawn
# symptom: `python pretrain.py --cfg config/slidr_voxelnet.yaml` fails starting the workers (popen_spawn_posix in the
#   traceback): "AttributeError: Can't pickle local object 'PretrainDataModule.train_dataloader.<locals>.<lambda>'"
# hazard: `worker_init_fn=lambda id: np.random.seed(...)` in the DataLoader with num_workers from the config
# runs-on-cpu: yes (under the spawn start method, as in the traceback; a plain class stands in for pl.LightningDataModule and a tensor list for nuScenes)
# printed (torch 2.13): AttributeError: Can't pickle local object 'PretrainDataModule.train_dataloader.<locals>.<lambda>' (run with multiprocessing.set_start_method("spawn"))
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def default_collate_pair_fn(list_data):
    clouds, images = zip(*list_data)
    return {"pc": torch.stack(clouds), "img": torch.stack(images)}


class NuScenesMatchDataset(Dataset):
    def __init__(self, phase, n=16):
        self.phase = phase
        self.items = [(torch.randn(64, 3), torch.randn(3, 8, 8)) for _ in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        return self.items[idx]


class PretrainDataModule:
    def __init__(self, config):
        self.config = config
        if config["num_gpus"]:
            self.batch_size = config["batch_size"] // config["num_gpus"]
        else:
            self.batch_size = config["batch_size"]

    def setup(self, stage):
        self.train_dataset = NuScenesMatchDataset(phase="train")

    def train_dataloader(self):
        if self.config["num_gpus"]:
            num_workers = self.config["num_threads"] // self.config["num_gpus"]
        else:
            num_workers = self.config["num_threads"]
        return DataLoader(
            self.train_dataset,
            batch_size=self.batch_size,
            shuffle=True,
            num_workers=num_workers,
            collate_fn=default_collate_pair_fn,
            pin_memory=False,
            drop_last=True,
            worker_init_fn=lambda id: np.random.seed(torch.initial_seed() // 2 ** 32 + id),  # hazard: GML212
        )


def main():
    config = {"num_gpus": 0, "batch_size": 4, "num_threads": 2}
    dm = PretrainDataModule(config)
    dm.setup("fit")
    for step, batch in enumerate(dm.train_dataloader()):
        print(step, batch["pc"].shape, batch["img"].shape)


if __name__ == "__main__":
    main()
