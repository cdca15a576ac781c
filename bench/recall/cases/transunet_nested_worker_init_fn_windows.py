# source: https://github.com/Beckschen/TransUNet/issues/95 (code: trainer.py, trainer_synapse; train.py's trainer dict)
# family: tensors crossing processes: a nested function handed to spawned DataLoader workers
# symptom: on Windows (a notebook run) the first pass over the loader fails with "AttributeError: Can't pickle local
#   object 'trainer_synapse.<locals>.worker_init_fn'"
# hazard: `worker_init_fn=worker_init_fn`, the def nested in trainer_synapse, with num_workers > 0 under spawn
# runs-on-cpu: yes, under spawn (the script sets it, standing in for Windows' default). Random slices stand in for the
#   Synapse volumes, a small conv net for the ViT-UNet, and a flip for RandomGenerator
# printed (torch 2.13): AttributeError: Can't pickle local object 'trainer_synapse.<locals>.worker_init_fn'
import random
import sys

import numpy as np
import torch
import torch.multiprocessing as mp
from torch import nn, optim
from torch.utils.data import DataLoader, Dataset


class RandomGenerator:
    def __call__(self, sample):
        if random.random() > 0.5:
            sample = {"image": np.flip(sample["image"], 1).copy(), "label": np.flip(sample["label"], 1).copy()}
        return {"image": torch.from_numpy(sample["image"])[None], "label": torch.from_numpy(sample["label"])}


class Synapse_dataset(Dataset):
    def __init__(self, n, transform=None):
        self.slices = [(np.random.rand(32, 32).astype(np.float32), np.random.randint(0, 3, (32, 32))) for _ in range(n)]
        self.transform = transform

    def __len__(self):
        return len(self.slices)

    def __getitem__(self, idx):
        image, label = self.slices[idx]
        sample = {"image": image, "label": label}
        return self.transform(sample) if self.transform else sample


def trainer_synapse(args, model, snapshot_path):
    db_train = Synapse_dataset(n=16, transform=RandomGenerator())
    print("The length of train set is: {}".format(len(db_train)))

    def worker_init_fn(worker_id):
        random.seed(args["seed"] + worker_id)

    trainloader = DataLoader(db_train, batch_size=args["batch_size"], shuffle=True, num_workers=2, pin_memory=False,
                             worker_init_fn=worker_init_fn)  # hazard: GML212
    model.train()
    ce_loss = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=args["base_lr"], momentum=0.9, weight_decay=0.0001)
    for epoch_num in range(args["max_epochs"]):
        for i_batch, sampled_batch in enumerate(trainloader):
            image_batch, label_batch = sampled_batch["image"], sampled_batch["label"]
            loss = ce_loss(model(image_batch), label_batch.long())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return "Training Finished!"


if __name__ == "__main__":
    mp.set_start_method("spawn")
    args = {"seed": 1234, "batch_size": 4, "base_lr": 0.01, "max_epochs": 1}
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 1))
    dataset_name = "Synapse"
    trainer = {"Synapse": trainer_synapse}
    print(trainer[dataset_name](args, net, snapshot_path="../model/TU_Synapse"))
