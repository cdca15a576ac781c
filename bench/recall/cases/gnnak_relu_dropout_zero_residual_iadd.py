# source: https://github.com/LingxiaoShawn/GNNAsKernel/issues/3 (code: core/model.py GNN.forward)
# family: autograd in-place errors: a tensor saved for backward then modified in place
# symptom: `python -m train.pattern ...` fails in loss.backward() with "one of the variables needed for gradient
#   computation has been modified by an inplace operation"; anomaly detection points at core/model.py line 37,
#   `x = F.relu(x)` in GNN.forward
# hazard: `x += previous_x` writes the ReLU output, which relu saved for backward: F.dropout with the default
#   dropout=0 returns its input itself, so x is still relu's result
# runs-on-cpu: yes. A Linear over the node features plus an index_add over edges stands in for the GINEConv of
#   pyg_gnn_wrapper, a Linear for the MLP output encoder; one inner GNN on a random graph
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [10, 16]], which is output 0 of Relu, is at version 1; expected version 0
#   instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with
#   torch.autograd.set_detect_anomaly(True, check_nan=False).
import torch
import torch.nn as nn
import torch.nn.functional as F

BN = True


class GINEConv(nn.Module):
    def __init__(self, nin, nout, bias=True):
        super().__init__()
        self.lin = nn.Linear(nin, nout, bias=bias)

    def forward(self, x, edge_index, edge_attr):
        msg = torch.zeros_like(x).index_add(0, edge_index[1], x[edge_index[0]] + edge_attr)
        return self.lin(x + msg)


class GNN(nn.Module):
    # this version use nin as hidden instead of nout, resulting a larger model
    def __init__(self, nin, nout, nlayer, gnn_type, dropout=0, bn=BN, bias=True, res=True):
        super().__init__()
        self.convs = nn.ModuleList([GINEConv(nin, nin, bias=not bn) for _ in range(nlayer)])  # set bias=False for BN
        self.norms = nn.ModuleList([nn.BatchNorm1d(nin) if bn else nn.Identity() for _ in range(nlayer)])
        self.output_encoder = nn.Linear(nin, nout, bias=bias) if nin != nout else nn.Identity()
        self.dropout = dropout
        self.res = res

    def forward(self, x, edge_index, edge_attr, batch):
        previous_x = x
        for layer, norm in zip(self.convs, self.norms):
            x = layer(x, edge_index, edge_attr)
            x = norm(x)
            x = F.relu(x)
            x = F.dropout(x, self.dropout, training=self.training)
            if self.res:
                x += previous_x  # hazard: GML109
                previous_x = x

        x = self.output_encoder(x)
        return x


model = GNN(16, 8, nlayer=2, gnn_type='GINEConv').train()
x = torch.randn(10, 16)
edge_index = torch.randint(0, 10, (2, 30))
edge_attr = torch.randn(30, 16)
loss = model(x, edge_index, edge_attr, torch.zeros(10, dtype=torch.long)).pow(2).mean()
loss.backward()
