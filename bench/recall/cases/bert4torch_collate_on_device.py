# source: https://github.com/Tongjilibo/bert4torch/issues/149
# family: CUDA in DataLoader workers
# symptom: the NER example fails once DataLoader's num_workers is set above 0: its collate_fn builds
#   the batch tensors directly on the CUDA device (Cannot re-initialize CUDA in forked subprocess)
# hazard: torch.tensor(..., device=device) inside the collate_fn that the workers run
# runs-on-cpu: no (CUDA-only: static only)
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

maxlen = 16
device = "cuda" if torch.cuda.is_available() else "cpu"
categories_label2id = {"O": 0, "B-LOC": 1, "I-LOC": 2}


def sequence_padding(seqs, value=0):
    width = max(len(s) for s in seqs)
    return np.array([np.concatenate([s, [value] * (width - len(s))]) for s in seqs])


class MyDataset(Dataset):
    def __init__(self):
        self.data = [("abcdef", (0, 1, "LOC")), ("ghij", (1, 3, "LOC"))] * 8

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return self.data[i]


def collate_fn(batch):
    batch_token_ids, batch_labels = [], []
    for text, (start, end, label) in batch:
        token_ids = [ord(c) % 100 for c in text[:maxlen]]
        labels = np.zeros(len(token_ids))
        labels[start] = categories_label2id["B-" + label]
        labels[start + 1:end + 1] = categories_label2id["I-" + label]
        batch_token_ids.append(token_ids)
        batch_labels.append(labels)
    batch_token_ids = torch.tensor(sequence_padding(batch_token_ids), dtype=torch.long, device=device)  # hazard: GML205
    batch_labels = torch.tensor(sequence_padding(batch_labels), dtype=torch.long, device=device)
    return batch_token_ids, batch_labels


train_dataloader = DataLoader(MyDataset(), batch_size=4, shuffle=True, collate_fn=collate_fn, num_workers=2)
if __name__ == "__main__":
    for token_ids, labels in train_dataloader:
        print(token_ids.shape, labels.shape)
