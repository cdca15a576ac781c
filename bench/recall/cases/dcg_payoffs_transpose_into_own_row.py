# source: https://github.com/wendelinboehmer/dcg/pull/19 (code: src/controllers/dcg_controller.py before the PR,
#   DeepCoordinationGraphMAC.payoffs, with the constructor lines and helpers it uses)
# family: autograd in-place errors: a write whose source overlaps its destination
# symptom: "I am running into the following error otherwise: output[1] = output[1].transpose(dim0=-2, dim1=-1)
#   RuntimeError: unsupported operation: some elements of the input tensor and the written-to tensor refer to a single
#   memory location. Please clone() the tensor before performing the operation."; the PR adds `.clone()`
# hazard: `output[1] = output[1].transpose(dim0=-2, dim1=-1)` copies the transpose of a slice of output into that
#   same slice
# runs-on-cpu: yes. A small args namespace and random hidden states stand in for the pymarl scheme and the agent RNN;
#   BasicMAC's constructor is reduced to the attributes payoffs uses
# printed (torch 2.13): RuntimeError: unsupported operation: some elements of the input tensor and the written-to
#   tensor refer to a single memory location. Please clone() the tensor before performing the operation.
from types import SimpleNamespace

import numpy as np
import torch as th
import torch.nn as nn


class BasicMAC:
    def __init__(self, scheme, groups, args):
        self.n_agents = args.n_agents
        self.args = args


class DeepCoordinationGraphMAC(BasicMAC):
    def __init__(self, scheme, groups, args):
        super().__init__(scheme, groups, args)
        self.n_actions = args.n_actions
        self.payoff_rank = args.cg_payoff_rank
        self.payoff_decomposition = isinstance(self.payoff_rank, int) and self.payoff_rank > 0
        self.utility_fun = self._mlp(self.args.rnn_hidden_dim, args.cg_utilities_hidden_dim, self.n_actions)
        payoff_out = 2 * self.payoff_rank * self.n_actions if self.payoff_decomposition else self.n_actions ** 2
        self.payoff_fun = self._mlp(2 * self.args.rnn_hidden_dim, args.cg_payoffs_hidden_dim, payoff_out)
        self.edges_from = None
        self.edges_to = None
        self._set_edges(self._edge_list(args.cg_edges))

    def payoffs(self, hidden_states):
        """ Computes all payoffs for a given batch of hidden states. """
        n = self.n_actions
        inputs = th.stack([th.cat([hidden_states[:, self.edges_from], hidden_states[:, self.edges_to]], dim=-1),
                           th.cat([hidden_states[:, self.edges_to], hidden_states[:, self.edges_from]], dim=-1)], dim=0)
        output = self.payoff_fun(inputs)
        if self.payoff_decomposition:
            dim = list(output.shape[:-1])
            output = output.view(*[np.prod(dim) * self.payoff_rank, 2, n])
            output = th.bmm(output[:, 0, :].unsqueeze(dim=-1), output[:, 1, :].unsqueeze(dim=-2))
            output = output.view(*(dim + [self.payoff_rank, n, n])).sum(dim=-3)
        else:
            output = output.view(*(list(output.shape[:-1]) + [n, n]))
        # The output of the backward messages must be transposed
        output[1] = output[1].transpose(dim0=-2, dim1=-1)  # hazard: GML110
        # Compute the symmetric average of each edge with it's flipped counterpart
        return output.mean(dim=0)

    @staticmethod
    def _mlp(input, hidden_dims, output):
        hidden_dims = [] if hidden_dims is None else hidden_dims
        hidden_dims = [hidden_dims] if isinstance(hidden_dims, int) else hidden_dims
        dim = input
        layers = []
        for d in hidden_dims:
            layers.append(nn.Linear(dim, d))
            layers.append(nn.ReLU())
            dim = d
        layers.append(nn.Linear(dim, output))
        return nn.Sequential(*layers)

    def _edge_list(self, arg):
        edges = []
        if arg == 'line':
            edges = [(i, i + 1) for i in range(self.n_agents - 1)]
        elif arg == 'full':
            edges = [[(j, i + j + 1) for i in range(self.n_agents - j - 1)] for j in range(self.n_agents - 1)]
            edges = [e for l in edges for e in l]
        return edges

    def _set_edges(self, edge_list):
        self.edges_from = th.zeros(len(edge_list), dtype=th.long)
        self.edges_to = th.zeros(len(edge_list), dtype=th.long)
        for i, edge in enumerate(edge_list):
            self.edges_from[i] = edge[0]
            self.edges_to[i] = edge[1]


args = SimpleNamespace(n_agents=3, n_actions=4, cg_payoff_rank=None, rnn_hidden_dim=8, cg_utilities_hidden_dim=None,
                       cg_payoffs_hidden_dim=16, cg_edges='full')
mac = DeepCoordinationGraphMAC(scheme=None, groups=None, args=args)
hidden_states = th.randn(2, args.n_agents, args.rnn_hidden_dim)
f_ij = mac.payoffs(hidden_states)
print(f_ij.shape)
