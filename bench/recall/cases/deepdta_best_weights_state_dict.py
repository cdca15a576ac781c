# source: https://github.com/THGLab/LP-PDBBind/pull/1 (code: model_retraining/deepdta/trainer.py, Trainer.train, before the fix)
# family: silent aliasing: a `state_dict()` kept as the best weights while training goes on
# symptom: "Fixed saving of best_weights": `best_weights = self.model.state_dict()` keeps references to the live
#   parameters, so the later epochs keep updating it and `load_state_dict(best_weights)` restores the last epoch, not
#   the best one (the retrained DeepDTA's reported RMSE changed after the fix)
# hazard: `best_weights = self.model.state_dict()` when the validation loss improves
# runs-on-cpu: yes (a small embedding+conv model and random sequences stand in for DeepDTA and the PDBBind split)
# printed (torch 2.13): "best epoch 3: its saved weight sum changed from 0.0539 to -0.0586 by the end", then
#   "restored == last epoch: True" (epoch 5 had the higher validation loss 8.2228 against 6.5093)
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class TinyDTA(nn.Module):
    def __init__(self, vocab=20, channel=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, channel)
        self.conv = nn.Conv1d(channel, channel, 3)
        self.out = nn.Linear(channel, 1)

    def forward(self, seq):
        h = self.conv(self.emb(seq).transpose(1, 2)).amax(dim=2)
        return self.out(h).squeeze(1)


class Trainer:
    def __init__(self, model, train_set, val_set):
        self.model = model
        self.train_set = train_set
        self.val_set = val_set

    def train(self, lr, num_epochs, batch_size):
        optimizer = torch.optim.Adam(self.model.parameters(), lr=lr, weight_decay=1e-5)
        criterion = nn.MSELoss()
        train_loader = DataLoader(self.train_set, batch_size=batch_size, shuffle=True)
        val_loader = DataLoader(self.val_set, batch_size=batch_size)
        best_weights = None
        best_val_loss = np.inf
        best_epoch = 0
        best_sum = None
        for epoch in range(num_epochs):
            self.model.train()
            for seq, target in train_loader:
                optimizer.zero_grad()
                loss = criterion(self.model(seq), target)
                loss.backward()
                optimizer.step()
            self.model.eval()
            val_loss = 0.0
            with torch.no_grad():
                for seq, target in val_loader:
                    val_loss += criterion(self.model(seq), target).item()
            val_loss /= len(val_loader)
            if val_loss < best_val_loss:
                best_val_loss = val_loss
                best_weights = self.model.state_dict()  # hazard: GML102
                best_epoch = epoch
                best_sum = float(best_weights["out.weight"].sum())
            print(f"epoch {epoch}: val loss {val_loss:.4f}")
        print(f"best epoch {best_epoch}: its saved weight sum changed from {best_sum:.4f} to "
              f"{float(best_weights['out.weight'].sum()):.4f} by the end")
        last = {k: v.clone() for k, v in self.model.state_dict().items()}
        self.model.load_state_dict(best_weights)
        print("restored == last epoch:", all(torch.equal(last[k], v) for k, v in self.model.state_dict().items()))


torch.manual_seed(0)
seqs = torch.randint(0, 20, (64, 12))
targets = torch.randn(64)
trainer = Trainer(TinyDTA(), TensorDataset(seqs[:48], targets[:48]), TensorDataset(seqs[48:], targets[48:] + 3.0))
trainer.train(lr=0.05, num_epochs=6, batch_size=16)
