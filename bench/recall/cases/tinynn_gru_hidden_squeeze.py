# source: https://github.com/alibaba/TinyNeuralNetwork/issues/238
# family: autograd in-place error on a multi-output view (unbind)
# symptom: the quantizable GRU's forward, given an initial hidden state, raises at
#   `hx = [(hx[idx].squeeze_(0)) for idx in range(self.num_layers)]`:
#   "Output 0 of UnbindBackward0 is a view and is being modified inplace"
# hazard: squeeze_ (an in-place metadata change) on each output of unbind(0), in a comprehension
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: Output 0 of Unbind is a view and is being modified inplace. ...
import torch
import torch.nn as nn


class GRULayer(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.cell = nn.GRUCell(input_size, hidden_size)

    def forward(self, x, h):
        outputs = []
        for step in x.unbind(0):
            h = self.cell(step, h)
            outputs.append(h)
        return torch.stack(outputs), h


class GRU(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=1):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        sizes = [input_size] + [hidden_size] * (num_layers - 1)
        self.layers = nn.ModuleList(GRULayer(size, hidden_size) for size in sizes)

    def forward(self, x, hidden=None):
        max_batch_size = x.size(1)
        if hidden is None:
            hx = [torch.zeros(max_batch_size, self.hidden_size) for _ in range(self.num_layers)]
        else:
            hx = hidden.reshape(self.num_layers, 1, max_batch_size, self.hidden_size).unbind(0)
            hx = [(hx[idx].squeeze_(0)) for idx in range(self.num_layers)]  # hazard: GML105
        hx_list = []
        for idx, layer in enumerate(self.layers):
            x, h = layer(x, hx[idx])
            hx_list.append(h)
        return x, torch.stack(hx_list)


encoder = nn.Linear(6, 8)
rnn = GRU(input_size=5, hidden_size=8, num_layers=2)
initial = encoder(torch.randn(2, 4, 6))
output, h_n = rnn(torch.randn(7, 4, 5), initial)
print(output.shape, h_n.shape)
