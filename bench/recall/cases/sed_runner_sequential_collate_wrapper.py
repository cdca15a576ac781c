# source: https://github.com/chenxie95/deeplearning_course_sjtu/issues/12
# family: tensors crossing processes: a nested collate function from a factory, handed to DataLoader workers under spawn
# symptom: running the sound-event-detection homework locally on Windows fails at `for batch in trainloader:` in
#   Runner.train (called from train_evaluate through fire.Fire(Runner)): "Can't pickle local object
#   'sequential_collate.<locals>.wrapper'", and each spawned worker dies with "EOFError: Ran out of input"
# hazard: `collate_fn=sequential_collate(False)` given to the training DataLoader with num_workers=2
# runs-on-cpu: yes (under the spawn start method, the reporter's Windows default). The homework's code is not in the
#   stored repository: the factory's shape (a `wrapper` nested in `sequential_collate`) is read from the qualified name in
#   the traceback; random log-mel frames stand in for the DCASE features, a GRU tagger for the CRNN, a plain call for fire
# printed (torch 2.13): AttributeError: Can't pickle local object 'sequential_collate.<locals>.wrapper' (run with
#   multiprocessing.set_start_method("spawn"); under Linux's fork it trains)
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class FrameDataset(Dataset):
    def __init__(self, n=24, n_mels=16, n_classes=5):
        g = torch.Generator().manual_seed(0)
        self.feats = [torch.randn(int(t), n_mels, generator=g) for t in torch.randint(20, 40, (n,), generator=g)]
        self.labels = [torch.randint(0, 2, (n_classes,), generator=g).float() for _ in range(n)]

    def __len__(self):
        return len(self.feats)

    def __getitem__(self, idx):
        return self.feats[idx], self.labels[idx]


def pad(tensorlist, padding_value=0.0):
    lengths = [len(t) for t in tensorlist]
    out = tensorlist[0].new_full((len(tensorlist), max(lengths)) + tensorlist[0].shape[1:], padding_value)
    for i, t in enumerate(tensorlist):
        out[i, :len(t)] = t
    return out, lengths


def sequential_collate(return_length=True):
    def wrapper(batches):
        seqs = []
        for data_seq in zip(*batches):
            if isinstance(data_seq[0], torch.Tensor) and data_seq[0].dim() > 1:
                data_seq, data_len = pad(data_seq)
                if return_length:
                    seqs.append(data_len)
            else:
                data_seq = torch.stack(data_seq)
            seqs.append(data_seq)
        return seqs
    return wrapper


class Tagger(nn.Module):
    def __init__(self, n_mels=16, n_classes=5):
        super().__init__()
        self.gru = nn.GRU(n_mels, 16, batch_first=True)
        self.out = nn.Linear(16, n_classes)

    def forward(self, x):
        h, _ = self.gru(x)
        return torch.sigmoid(self.out(h)).mean(1)


class Runner:
    def train(self, epochs=2):
        trainloader = DataLoader(
            FrameDataset(),
            batch_size=8,
            shuffle=True,
            collate_fn=sequential_collate(False),  # hazard: GML212
            num_workers=2,
        )
        model = Tagger()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        criterion = nn.BCELoss()
        for epoch in range(epochs):
            for feats, targets in trainloader:
                loss = criterion(model(feats), targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print("epoch", epoch, "loss", round(loss.item(), 4))
        return model

    def train_evaluate(self):
        return self.train()


if __name__ == "__main__":
    Runner().train_evaluate()
