# source: https://github.com/Rose-STL-Lab/torchTS/issues/50 (code: torchts/nn/graph.py DCGRUCell at 600b8c3; fixed by
#   6b04b6d, PR #59)
# family: autograd in-place errors: a tensor saved for backward then modified in place
# symptom: "Inplace operation in fully-connected reset and update gates": with use_gc_for_ru=False, "PyTorch raises an
#   exception that one of the variables needed for gradient computation has been modified by an inplace operation,
#   which is caused by" graph.py line 91, `value += self._ru_biases`
# hazard: DCGRUCell._fc adds the bias in place to torch.sigmoid's output, which sigmoid saved for backward; forward
#   reaches _fc through `fn = self._gconv if self._use_gc_for_ru else self._fc`
# runs-on-cpu: yes. The `raise NotImplementedError` that guarded the fully-connected gates is left out, as the
#   maintainer did to reach line 91; a dense identity stands in for the scaled Laplacian (scipy), with
#   max_diffusion_step=0 so torch.sparse.mm is not reached
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [12, 8]], which is output 0 of Sigmoid, is at version 1; expected version 0
#   instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with
#   torch.autograd.set_detect_anomaly(True, check_nan=False).
import torch
from torch import nn


class DCGRUCell(nn.Module):
    def __init__(self, num_units, adj_mx, max_diffusion_step, num_nodes, input_dim, activation=torch.tanh,
                 filter_type="laplacian", use_gc_for_ru=True):
        super().__init__()
        self._activation = activation
        self._num_nodes = num_nodes
        self._num_units = num_units
        self._max_diffusion_step = max_diffusion_step
        self._use_gc_for_ru = use_gc_for_ru
        supports = torch.cat([s.unsqueeze(dim=0) for s in [adj_mx]])
        self.register_buffer("_supports", supports)

        num_matrices = len(supports) * self._max_diffusion_step + 1
        input_size_gconv = (self._num_units + input_dim) * num_matrices
        if self._use_gc_for_ru:
            input_size_ru = input_size_gconv
        else:
            input_size_ru = self._num_units + input_dim

        output_size = 2 * self._num_units
        self._ru_weights = nn.Parameter(torch.empty(input_size_ru, output_size))
        self._ru_biases = nn.Parameter(torch.empty(output_size))
        nn.init.xavier_normal_(self._ru_weights, gain=1.0)
        nn.init.constant_(self._ru_biases, val=1.0)
        self._gconv_weights = nn.Parameter(torch.empty(input_size_gconv, self._num_units))
        self._gconv_biases = nn.Parameter(torch.zeros(self._num_units))
        nn.init.xavier_normal_(self._gconv_weights, gain=1.0)

    def forward(self, inputs, hx):
        fn = self._gconv if self._use_gc_for_ru else self._fc
        output_size = 2 * self._num_units
        value = torch.sigmoid(fn(inputs, hx, output_size, bias_start=1.0, reset=True))
        value = torch.reshape(value, (-1, self._num_nodes, output_size))
        r, u = torch.split(tensor=value, split_size_or_sections=self._num_units, dim=-1)
        r = torch.reshape(r, (-1, self._num_nodes * self._num_units))
        u = torch.reshape(u, (-1, self._num_nodes * self._num_units))
        c = self._gconv(inputs, r * hx, self._num_units)
        if self._activation is not None:
            c = self._activation(c)
        return u * hx + (1.0 - u) * c

    def _fc(self, inputs, state, output_size, bias_start=0.0, reset=True):
        batch_size = inputs.shape[0]
        shape = (batch_size * self._num_nodes, -1)
        inputs = torch.reshape(inputs, shape)
        state = torch.reshape(state, shape)
        inputs_and_state = torch.cat([inputs, state], dim=-1)

        value = torch.sigmoid(torch.matmul(inputs_and_state, self._ru_weights))
        value += self._ru_biases  # hazard: GML109

        return value

    def _gconv(self, inputs, state, output_size, bias_start=0.0, reset=False):
        batch_size = inputs.shape[0]
        x = torch.cat([torch.reshape(inputs, (batch_size, self._num_nodes, -1)),
                       torch.reshape(state, (batch_size, self._num_nodes, -1))], dim=2)
        x = torch.reshape(x, [batch_size * self._num_nodes, -1])
        weights, biases = (self._ru_weights, self._ru_biases) if reset else (self._gconv_weights, self._gconv_biases)
        x = torch.matmul(x, weights) + biases
        return torch.reshape(x, [batch_size, self._num_nodes * output_size])


num_nodes, input_dim, num_units, batch_size = 6, 2, 4, 2
cell = DCGRUCell(num_units, torch.eye(num_nodes), 0, num_nodes, input_dim, use_gc_for_ru=False)
hx = cell(torch.randn(batch_size, num_nodes * input_dim), torch.zeros(batch_size, num_nodes * num_units))
hx.pow(2).mean().backward()
