# source: https://github.com/KevinMusgrave/powerful-benchmarker/issues/78 (code: src/powerful_benchmarker/architectures/
#   misc_models.py, MLP; the TrainWithClassifier order of pytorch-metric-learning's trainer)
# family: aliasing that silently changes values: a classifier head rectifies, in place, the embeddings it is given
# symptom: with TrainWithClassifier the run failed with an in-place error coming "from MLP layer of classifier";
#   removing `inplace` there fixed it. MLP puts nn.ReLU(inplace=True) before every Linear but the last, so the
#   classifier's first layer overwrites the embeddings that the metric loss then uses
# hazard: `return self.net(x)` in MLP.forward: the net's leading ReLU(inplace=True) writes the caller's embeddings
# runs-on-cpu: yes. A Linear trunk, a distance-based loss and a classifier of sizes [16, 16, 5] (a hidden layer, so
#   MLP inserts the leading ReLU) stand in for the reporter's trunk, metric loss and configured classifier
# printed (torch 2.13): embeddings changed by the classifier: True (the reporter's RuntimeError in backward
#   depends on their metric loss, not shown; here the metric loss silently reads rectified embeddings)
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    # layer_sizes[0] is the input dimension, layer_sizes[-1] the output dimension
    def __init__(self, layer_sizes, final_relu=False):
        super().__init__()
        layer_list = []
        layer_sizes = [int(x) for x in layer_sizes]
        num_layers = len(layer_sizes) - 1
        final_relu_layer = num_layers if final_relu else num_layers - 1
        for i in range(len(layer_sizes) - 1):
            if i < final_relu_layer:
                layer_list.append(nn.ReLU(inplace=True))
            layer_list.append(nn.Linear(layer_sizes[i], layer_sizes[i + 1]))
        self.net = nn.Sequential(*layer_list)

    def forward(self, x):
        return self.net(x)  # hazard: GML107


class TrainWithClassifier:
    def __init__(self, trunk, embedder, classifier):
        self.models = {"trunk": trunk, "embedder": embedder, "classifier": classifier}

    def compute_embeddings(self, data):
        return self.models["embedder"](self.models["trunk"](data))

    def calculate_loss(self, data, labels):
        embeddings = self.compute_embeddings(data)
        before = embeddings.detach().clone()
        logits = self.models["classifier"](embeddings)
        print("embeddings changed by the classifier:", not torch.equal(before, embeddings.detach()))
        metric_loss = torch.cdist(embeddings, embeddings)[labels[:, None] == labels[None, :]].mean()
        return metric_loss + F.cross_entropy(logits, labels)


torch.manual_seed(0)
trainer = TrainWithClassifier(nn.Linear(32, 64), MLP([64, 16]), MLP([16, 16, 5]))
loss = trainer.calculate_loss(torch.randn(8, 32), torch.randint(0, 5, (8,)))
loss.backward()
