# source: https://github.com/kaniblu/pytorch-models/pull/8 ("inplace operation rnn fixed"; code: torchmodels/modules/
#   rnn.py BaseRNN.forward and LSTM.forward_cell at the parent of 23ee691, torchmodels/utils.py mask)
# family: autograd in-place errors: a tensor saved for backward then modified in place
# symptom: the PR ("inplace operation rnn fixed", commit "removed inplace operation") deletes
#   `o.masked_fill_(1 - mask.unsqueeze(-1), 0)` from BaseRNN.forward; the PR quotes no traceback: with lengths given,
#   backward through the LSTM fails with "one of the variables needed for gradient computation has been modified by
#   an inplace operation" (measured, below)
# hazard: BaseRNN.forward zeroes the padded steps of `o` in place, where `o` is the nn.LSTM output that
#   LSTM.forward_cell (an override of the base class's hook) returned and the LSTM's backward saved
# runs-on-cpu: yes. `1 - mask` is written `~mask` (utils.mask returns a bool tensor today, and `-` on bool tensors is
#   refused); common.Module is nn.Module; dynamic=False, so no packing; h0 is None
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [7, 4, 8]], which is output 0 of MkldnnRnnLayer, is at version 1; expected
#   version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with
#   torch.autograd.set_detect_anomaly(True, check_nan=False).
import torch
import torch.nn as nn
import torch.nn.utils.rnn as tr


def mask(lens, max_len=None):
    if max_len is None:
        max_len = lens.max().item()
    enum = torch.arange(max_len).long().to(lens)
    return lens.unsqueeze(1) > enum.unsqueeze(0)


class AbstractRNN(nn.Module):
    def __init__(self, input_dim, hidden_dim):
        super(AbstractRNN, self).__init__()
        self.input_dim = input_dim
        self.hidden_dim = hidden_dim


class BaseRNN(AbstractRNN):
    def __init__(self, *args, dynamic=False, layers=1, dropout=0, **kwargs):
        super(BaseRNN, self).__init__(*args, **kwargs)
        self.dynamic = dynamic
        self.layers = layers
        self.dropout = dropout

    def forward_cell(self, x, h0):
        raise NotImplementedError()

    def forward(self, x, lens=None, h=None):
        batch_size, max_len, _ = x.size()
        mask_ = None
        if lens is not None:
            mask_ = mask(lens, max_len)
            x = x.masked_fill(~mask_.unsqueeze(-1), 0)
        if self.dynamic:
            x = tr.pack_padded_sequence(x, lens, True)
        o, c, h = self.forward_cell(x, h)
        if self.dynamic:
            o, _ = tr.pad_packed_sequence(o, True, 0, max_len)
            o = o.contiguous()
        if lens is not None:
            o.masked_fill_(~mask_.unsqueeze(-1), 0)  # hazard: GML109
        return o, c, h


class LSTM(BaseRNN):
    name = "lstm"

    def __init__(self, *args, **kwargs):
        super(LSTM, self).__init__(*args, **kwargs)
        self.lstm = nn.LSTM(input_size=self.input_dim, hidden_size=self.hidden_dim, num_layers=self.layers,
                            bidirectional=False, dropout=self.dropout, batch_first=True)

    def forward_cell(self, x, h0):
        o, (h, c) = self.lstm(x, h0)
        h = h.permute(1, 0, 2).contiguous()
        c = c.permute(1, 0, 2).contiguous()
        return o, c[:, -1], h[:, -1]


rnn = LSTM(6, 8)
x = torch.randn(4, 7, 6)
lens = torch.randint(3, 8, (4,))
o, c, h = rnn(x, lens)
(o.sum() + h.sum()).backward()
