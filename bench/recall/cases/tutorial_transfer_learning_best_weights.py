# source: https://github.com/pytorch/tutorials/pull/188
# family: state_dict() kept as a snapshot
# symptom: train_model's "best" weights are the last epoch's: "best_model_wts changes always to last
#   epoch's state"; the fix is copy.deepcopy(model.state_dict())
# hazard: `best_model_wts = model.state_dict()` when validation improves; later epochs overwrite it
# runs-on-cpu: yes
# printed (torch 2.13): best epoch 0 (acc 0.500), restored weights equal the last epoch's: True
import torch
import torch.nn as nn


def train_model(model, dataloaders, criterion, optimizer, num_epochs=4):
    best_model_wts = model.state_dict()
    best_acc, best_epoch = 0.0, -1
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            model.train(phase == "train")
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_corrects += (outputs.argmax(1) == labels).sum().item()
            epoch_acc = running_corrects / sum(len(b[1]) for b in dataloaders[phase])
            if phase == "val" and epoch_acc > best_acc:
                best_acc, best_epoch = epoch_acc, epoch
                best_model_wts = model.state_dict()  # hazard: GML102
    last_weight = model.weight.detach().clone()
    model.load_state_dict(best_model_wts)
    print(f"best epoch {best_epoch} (acc {best_acc:.3f}), restored weights equal the last epoch's:",
          torch.equal(model.weight, last_weight))
    return model


torch.manual_seed(0)
data = {p: [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(2)] for p in ["train", "val"]}
net = nn.Linear(4, 2)
train_model(net, data, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.5))
