# source: https://github.com/asappresearch/flambe/pull/168 (code: flambe/learn/train.py, Trainer._eval_step, the
#   `_best_model` line of the diff)
# family: aliasing that silently changes values: a `.cpu().detach()` snapshot of the state dict
# symptom: replacing `deepcopy(self.model.state_dict())` by `{k: t.cpu().detach() ...}` (to keep the best model on
#   the CPU) made the tests fail; on a CPU model `.cpu()` returns the tensor itself and `.detach()` shares its memory,
#   so the kept "best" weights follow every later step
# hazard: `self._best_model = {k: t.cpu().detach() for k, t in self.model.state_dict().items()}` in _eval_step,
#   loaded back at the end of training
# runs-on-cpu: yes. A linear model, SGD on random data and a scripted validation metric stand in for flambe's
#   Trainer and its sampler
# printed (torch 2.13): best weight at epoch 0: 0.2309 / restored at the end: 0.2209 (the last epoch's)
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, metrics, lower_is_better=False):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
        self.metrics = iter(metrics)
        self.lower_is_better = lower_is_better
        self._best_metric = None
        self._best_model = None

    def _train_step(self, x, y):
        self.optimizer.zero_grad()
        nn.functional.mse_loss(self.model(x), y).backward()
        self.optimizer.step()

    def _eval_step(self):
        val_metric = next(self.metrics)
        sign = (-1) ** (self.lower_is_better)
        if self._best_metric is None or (sign * val_metric > sign * self._best_metric):
            self._best_metric = val_metric
            self._best_model = {k: t.cpu().detach() for k, t in self.model.state_dict().items()}  # hazard: GML102
            self.best_weight = self.model.weight[0, 0].item()

    def run(self, x, y, epochs):
        for _ in range(epochs):
            self._train_step(x, y)
            self._eval_step()
        self.model.load_state_dict(self._best_model)


torch.manual_seed(1)
trainer = Trainer(nn.Linear(3, 1), metrics=[0.9, 0.5, 0.4, 0.3])
trainer.run(torch.randn(16, 3), torch.randn(16, 1), epochs=4)
print(f"best weight at epoch 0: {trainer.best_weight:.4f} / restored at the end: {trainer.model.weight[0, 0].item():.4f}")
