# source: https://github.com/huggingface/datasets/issues/6673
# family: tensors crossing processes: a dataset's epoch set in the main process while persistent workers keep their copy
# symptom: "IterableDataset `set_epoch` is ignored when DataLoader `persistent_workers=True`": with num_workers > 0
#   and persistent workers, the epoch set through `shuffled_dataset.set_epoch(epoch)` never reaches the dataset copies
#   in the workers, so every epoch is shuffled the same way
# hazard: `shuffled_dataset.set_epoch(epoch)` in the epoch loop over the persistent-worker DataLoader
# runs-on-cpu: no (needs the `datasets` package, absent from the venv)
# printed (torch 2.13): - (not run: `datasets` is not installed)
import torch
from datasets import load_dataset
from torch.utils.data import DataLoader


def collate(examples):
    return torch.tensor([len(e["text"]) for e in examples])


def train(epochs=3):
    dataset = load_dataset("allenai/c4", "en", split="train", streaming=True)
    shuffled_dataset = dataset.shuffle(seed=42, buffer_size=10_000)
    loader = DataLoader(
        shuffled_dataset.with_format("torch"),
        batch_size=32,
        num_workers=4,
        persistent_workers=True,
        collate_fn=collate,
    )
    for epoch in range(epochs):
        shuffled_dataset.set_epoch(epoch)  # hazard: GML210
        for step, lengths in enumerate(loader):
            if step == 10:
                break
            print(epoch, step, lengths[:4].tolist())


if __name__ == "__main__":
    train()
