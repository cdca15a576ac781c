# source: https://github.com/WMD-group/SMACT/pull/601 (the review thread on smact/property_prediction/roost/train.py, train_roost_model, before the fix)
# family: aliasing that silently changes values: a state_dict() snapshot kept with dict.copy()
# symptom: the "best" weights restored after early stopping are the last epoch's: `model.state_dict().copy()` copies
#   the dict, not the tensors, so every optimiser step also updates best_state_dict; fixed with copy.deepcopy
# hazard: `best_state_dict = model.state_dict().copy()` in the epoch loop, restored by load_state_dict after it
# runs-on-cpu: yes
# printed (torch 2.13): best epoch 1 best val 0.6196 restored val 0.7627 restored weights equal the last epoch's: True
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


def train_roost_model(epochs=6, patience=None, learning_rate=0.2):
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    train_loader = DataLoader(TensorDataset(x[:48], y[:48]), batch_size=16, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[48:], y[48:]), batch_size=16)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=1e-6)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimiser, mode="min", factor=0.5, patience=10)
    l1_loss = nn.L1Loss()

    best_val_loss = float("inf")
    best_state_dict = None
    best_epoch = None
    epochs_without_improvement = 0
    for epoch in range(epochs):
        model.train()
        for inputs, target in train_loader:
            optimiser.zero_grad()
            loss = l1_loss(model(inputs), target)
            loss.backward()
            optimiser.step()

        model.eval()
        val_loss = 0.0
        with torch.no_grad():
            for inputs, target in val_loader:
                val_loss += l1_loss(model(inputs), target).item()
        val_loss /= len(val_loader)
        scheduler.step(val_loss)

        if val_loss < best_val_loss:
            best_val_loss = val_loss
            best_epoch = epoch
            best_state_dict = model.state_dict().copy()  # hazard: GML102
            epochs_without_improvement = 0
        else:
            epochs_without_improvement += 1
        if patience is not None and epochs_without_improvement >= patience:
            break

    last = {k: v.clone() for k, v in model.state_dict().items()}
    if best_state_dict is not None:
        model.load_state_dict(best_state_dict)
    with torch.no_grad():
        restored = sum(l1_loss(model(i), t).item() for i, t in val_loader) / len(val_loader)
    same = all(torch.equal(last[k], v) for k, v in model.state_dict().items())
    print("best epoch", best_epoch, "best val", round(best_val_loss, 4), "restored val", round(restored, 4),
          "restored weights equal the last epoch's:", same)


if __name__ == "__main__":
    train_roost_model()
