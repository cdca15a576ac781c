# source: https://github.com/WenjieDu/PyPOTS/issues/667 (code: pypots/base.py and classification/base.py, _train_model)
# family: aliasing that silently changes values: a state_dict() kept as a snapshot
# symptom: "the line below should be `self.best_model_dict = deepcopy(self.model.state_dict())`. Otherwise the best
#   model keeps getting updated, because `model.state_dict()` returns a reference to the dict"; more epochs gave
#   different results although the best model was at the same epoch
# hazard: self.best_model_dict = self.model.state_dict() kept while later epochs' optimizer steps write the weights
# runs-on-cpu: yes (a one-layer model stands in for the library's networks)
# printed (torch 2.13): best bias -0.41239720582962036 loaded bias -0.44528332352638245 (the loaded weights are the last epoch's)
import numpy as np
import torch
import torch.nn as nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def forward(self, inputs):
        return {'loss': ((self.linear(inputs['X']) - inputs['y']) ** 2).mean()}


class BaseNNModel:
    def __init__(self, learning_rate, epochs, patience):
        self.lr, self.epochs, self.patience, self.original_patience = learning_rate, epochs, patience, patience
        self.model = TinyNet()

    def assemble_input_data(self, data):
        return {'X': data[0], 'y': data[1]}

    def _train_model(self, training_loader, val_loader=None):
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=self.lr)
        self.best_loss = float('inf')
        self.best_model_dict = None
        for epoch in range(self.epochs):
            self.model.train()
            for idx, data in enumerate(training_loader):
                inputs = self.assemble_input_data(data)
                self.optimizer.zero_grad()
                results = self.model.forward(inputs)
                results['loss'].backward()
                self.optimizer.step()
            with torch.no_grad():
                mean_loss = np.mean([self.model.forward(self.assemble_input_data(d))['loss'].item() for d in val_loader])
            if mean_loss < self.best_loss:
                self.best_loss = mean_loss
                self.best_model_dict = self.model.state_dict()  # hazard: GML102
                self.best_bias = self.model.linear.bias.item()
            else:
                self.patience -= 1
                if self.patience == 0:
                    break

    def fit(self, train_loader, val_loader):
        self._train_model(train_loader, val_loader)
        self.model.load_state_dict(self.best_model_dict)
        print('best bias', self.best_bias, 'loaded bias', self.model.linear.bias.item())


torch.manual_seed(0)
train = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(4)]
val = [(torch.randn(8, 4), 5 + torch.randn(8, 1))]  # a validation set unlike the training set: the best epoch is not the last
BaseNNModel(learning_rate=0.5, epochs=5, patience=5).fit(train, val)
