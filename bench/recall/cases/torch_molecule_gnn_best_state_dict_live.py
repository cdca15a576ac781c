# source: https://github.com/liugangcode/torch-molecule/pull/19 (code: torch_molecule/predictor/gnn/modeling_gnn.py,
#   GNNMolecularPredictor.fit)
# family: aliasing that silently changes values: `state_dict()` kept as the best weights
# symptom: "the model is saving the last epoch model_dict instead of best_model dict, although the code logic seems
#   right at first glance"; the fix is `best_state_dict = copy.deepcopy(self.model.state_dict())`
# hazard: `best_state_dict = self.model.state_dict()` in the epoch loop of fit, loaded back after the loop
# runs-on-cpu: yes. A linear regressor and random data stand in for the GNN and the molecule loaders; the
#   validation score is made to peak at epoch 1 so that the kept weights should be epoch 1's
# printed (torch 2.13): best epoch 1, weight kept then -0.0849, weight restored -0.0477 (the last epoch's)
import torch
import torch.nn as nn


class GNNMolecularPredictor:
    def __init__(self, epochs=5, lr=0.1):
        self.epochs = epochs
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)

    def _train_epoch(self, X, y):
        self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(X), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, X, y, val_scores):
        best_state_dict = None
        best_eval = float("-inf")
        for epoch in range(self.epochs):
            self._train_epoch(X, y)
            eval_score = val_scores[epoch]
            if eval_score > best_eval:
                best_eval = eval_score
                best_state_dict = self.model.state_dict()  # hazard: GML102
                self.best_epoch = epoch
                self.kept = best_state_dict["weight"][0, 0].item()
        if best_state_dict is not None:
            self.model.load_state_dict(best_state_dict)
        return self


torch.manual_seed(0)
X, y = torch.randn(32, 4), torch.randn(32, 1)
predictor = GNNMolecularPredictor().fit(X, y, val_scores=[0.1, 0.9, 0.3, 0.2, 0.4])
print(f"best epoch {predictor.best_epoch}, weight kept then {predictor.kept:.4f}, "
      f"weight restored {predictor.model.weight[0, 0].item():.4f}")
