# source: https://github.com/sicara/easy-few-shot-learning/pull/129 (code: notebooks/episodic_training.ipynb, the training cell; also pull/140)
# family: aliasing that silently changes values: a state_dict() kept as the best weights
# symptom: "Adding deepcopy to best_state deriving": `best_state = few_shot_classifier.state_dict()` keeps references
#   to the live parameters, so the state loaded after training is the last epoch's, not the best one
# hazard: `best_state = few_shot_classifier.state_dict()` in the epoch loop, read by load_state_dict after it
# runs-on-cpu: yes
# printed (torch 2.13): "Yeah! We found a new best model!" (epoch 0), then: best accuracy 0.219 at epoch 0; weight restored from best_state equals the last epoch's: True
import torch
import torch.nn as nn


class PrototypicalNetworks(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone

    def forward(self, x):
        return self.backbone(x)


def training_epoch(model, batches, optimizer):
    for x, y in batches:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


def evaluate(model, batches):
    with torch.no_grad():
        return sum((model(x).argmax(1) == y).float().mean().item() for x, y in batches) / len(batches)


torch.manual_seed(0)
train_batches = [(torch.randn(32, 10), torch.randint(0, 5, (32,))) for _ in range(8)]
val_batches = [(torch.randn(32, 10), torch.randint(0, 5, (32,))) for _ in range(4)]
few_shot_classifier = PrototypicalNetworks(nn.Linear(10, 5))
train_optimizer = torch.optim.SGD(few_shot_classifier.parameters(), lr=0.5)

best_state = few_shot_classifier.state_dict()
best_validation_accuracy, best_epoch = 0.0, -1
for epoch in range(5):
    training_epoch(few_shot_classifier, train_batches, train_optimizer)
    validation_accuracy = evaluate(few_shot_classifier, val_batches)
    if validation_accuracy > best_validation_accuracy:
        best_validation_accuracy, best_epoch = validation_accuracy, epoch
        best_state = few_shot_classifier.state_dict()  # hazard: GML102
        print("Yeah! We found a new best model!")

last = few_shot_classifier.backbone.weight.detach().clone()
few_shot_classifier.load_state_dict(best_state)
print(f"best accuracy {best_validation_accuracy:.3f} at epoch {best_epoch}; weight restored from best_state "
      f"equals the last epoch's: {torch.equal(few_shot_classifier.backbone.weight, last)}")
