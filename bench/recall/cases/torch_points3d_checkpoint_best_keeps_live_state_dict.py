# source: https://github.com/torch-points3d/torch-points3d/pull/216 (code: torch_points3d/metrics/model_checkpoint.py,
#   ModelCheckpoint.save_best_models_under_current_metrics and Checkpoint.save_objects, before the fix)
# family: aliasing that silently changes values: a state_dict() kept as the best weights
# symptom: "Checkpoint best model was being overriden with latest, all the time": the `best_<metric>` entry of the
#   checkpoint holds the live state_dict() of the epoch that was best, so every later epoch's training rewrites it and
#   the saved "best" weights are the latest
# hazard: `state_dict = model.state_dict()` stored as models_to_save["best_acc"] without a copy
# runs-on-cpu: yes. A linear model and random data stand in for the point-cloud model; one metric (acc, max); the
#   checkpoint is kept in memory (torch.save of the same dict would write the same values)
# printed (torch 2.13): best (epoch 0) equals latest weights: True
import torch
import torch.nn as nn


class Checkpoint:
    def __init__(self):
        self.models = {}
        self.stats = {"train": [], "val": []}

    def save_objects(self, models_to_save, stage, current_stat):
        self.models = models_to_save


class ModelCheckpoint:
    def __init__(self, selection_stage="val"):
        self._checkpoint = Checkpoint()
        self._selection_stage = selection_stage

    def save_best_models_under_current_metrics(self, model, metrics_holder):
        metrics, stage = metrics_holder["current_metrics"], metrics_holder["stage"]
        stats = self._checkpoint.stats
        state_dict = model.state_dict()
        current_stat = {"epoch": metrics_holder["epoch"]}
        models_to_save = self._checkpoint.models
        for metric_name, value in metrics.items():
            best = max([s.get("best_" + metric_name, value) for s in stats[stage]] + [value])
            current_stat["best_" + metric_name] = best
            if self._selection_stage == stage and value == best:
                models_to_save["best_{}".format(metric_name)] = state_dict  # hazard: GML102
        models_to_save["latest"] = state_dict
        stats[stage].append(current_stat)
        self._checkpoint.save_objects(models_to_save, stage, current_stat)


model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
checkpoint = ModelCheckpoint()
for epoch, acc in enumerate([0.9, 0.5, 0.4]):
    loss = model(torch.randn(16, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    checkpoint.save_best_models_under_current_metrics(model, {"current_metrics": {"acc": acc}, "stage": "val",
                                                              "epoch": epoch})
best = checkpoint._checkpoint.models["best_acc"]["weight"]
print("best (epoch 0) equals latest weights:", torch.equal(best, model.weight.detach()))
