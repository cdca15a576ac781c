# source: https://github.com/graytowne/revisit_adv_rec/issues/3 (code: trainers/wmf_trainer.py before the fix in
#   PR #4, WeightedMF and WMFTrainer._initialize / train_als)
# family: autograd in-place errors: a leaf that requires grad (or a view of one) written in place
# symptom: with the surrogate model "sur_wmf_afs" (WMF trained by alternating least squares) the program reports
#   "RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation."; the fix
#   writes `model.P.data[user] = ...`
# hazard: `model.P[user] = new_p_u.t()` assigns a row of the nn.Parameter P outside no_grad, in train_als, on the
#   model that _initialize stored in self.net
# runs-on-cpu: yes. A small dense 0/1 matrix stands in for the scipy sparse ratings; a SimpleNamespace for Bunch
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place
#   operation.
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


def sparse2tensor(row):
    return torch.FloatTensor(np.asarray(row, dtype=np.float32).reshape(1, -1))


def _array2diag(x):
    return torch.diag(torch.FloatTensor(np.asarray(x, dtype=np.float32)))


class WeightedMF(nn.Module):
    def __init__(self, n_users, n_items, model_args):
        super(WeightedMF, self).__init__()
        hidden_dims = model_args.hidden_dims
        self.n_users = n_users
        self.n_items = n_items
        self.dim = hidden_dims[0]
        self.Q = nn.Parameter(torch.zeros([self.n_items, self.dim]).normal_(mean=0, std=0.1))
        self.P = nn.Parameter(torch.zeros([self.n_users, self.dim]).normal_(mean=0, std=0.1))
        self.params = nn.ParameterList([self.Q, self.P])

    def forward(self, user_id=None, item_id=None):
        return torch.mm(self.P, self.Q.t())


class WMFTrainer:
    def __init__(self, n_users, n_items, args):
        self.args = args
        self.device = torch.device("cpu")
        self.n_users = n_users
        self.n_items = n_items

    def _initialize(self):
        model_args = SimpleNamespace(**self.args.model)
        self.net = WeightedMF(n_users=self.n_users, n_items=self.n_items, model_args=model_args).to(self.device)
        self.optimizer = optim.Adam(self.net.parameters(), lr=self.args.lr, weight_decay=self.args.l2)
        self.weight_alpha = self.args.model["weight_alpha"]
        self.dim = self.net.dim

    def train_als(self, data):
        model = self.net  # A warning will raise if use .to() method here.
        P = model.P.detach()
        Q = model.Q.detach()

        weight_alpha = self.weight_alpha - 1
        lamda_eye = torch.eye(self.dim).to(self.device) * self.args.l2
        residual = torch.mm(Q.t(), Q) + lamda_eye
        for user, batch_data in enumerate(data):
            x_u = sparse2tensor(batch_data).to(self.device).t()
            cu = batch_data * weight_alpha + 1
            Cu = _array2diag(cu).to(self.device)
            Cu_minusI = _array2diag(cu - 1).to(self.device)
            lhs = torch.mm(Q.t(), Cu_minusI.mm(Q)) + residual
            rhs = torch.mm(Q.t(), Cu.mm(x_u))

            new_p_u = torch.mm(lhs.inverse(), rhs)
            model.P[user] = new_p_u.t()  # hazard: GML108
        return 0


args = SimpleNamespace(model={"hidden_dims": [4], "weight_alpha": 20}, lr=0.01, l2=1e-5)
ratings = (np.random.rand(6, 10) > 0.7).astype(np.float32)
trainer = WMFTrainer(n_users=6, n_items=10, args=args)
trainer._initialize()
trainer.train_als(ratings)
print(trainer.net.P[0])
