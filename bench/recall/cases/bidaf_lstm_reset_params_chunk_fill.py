# source: https://github.com/galsang/BiDAF-pytorch/issues/30 (code: utils/nn.py, LSTM.reset_params, and model/model.py,
#   BiDAF.__init__, which builds its contextual and modeling layers from that LSTM)
# family: autograd in-place errors: an output of split/chunk written in place
# symptom: "getattr(self.rnn, f'bias_hh_l{i}').chunk(4)[1].fill_(1) RuntimeError: Output 1 of SplitBackward0 is a
#   view and is being modified inplace. This view is the output of a function that returns multiple views."
# hazard: `.chunk(4)[1].fill_(1)` on the LSTM's bias_hh Parameter (the forget-gate slice), outside no_grad, in
#   reset_params, which __init__ calls
# runs-on-cpu: yes. A small args namespace stands in for the command-line arguments; BiDAF keeps only its
#   contextual-embedding LSTM
# printed (torch 2.13): RuntimeError: Output 1 of Split is a view and is being modified inplace. This view
#   is the output of a function that returns multiple views. Such functions do not allow the output views to be
#   modified inplace. You should replace the inplace operation by an out-of-place one.
from types import SimpleNamespace

import torch
import torch.nn as nn


class LSTM(nn.Module):
    def __init__(self, input_size, hidden_size, batch_first=False, num_layers=1, bidirectional=False, dropout=0.2):
        super(LSTM, self).__init__()
        self.rnn = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers,
                           bidirectional=bidirectional, batch_first=batch_first)
        self.reset_params()
        self.dropout = nn.Dropout(p=dropout)

    def reset_params(self):
        for i in range(self.rnn.num_layers):
            nn.init.orthogonal_(getattr(self.rnn, f'weight_hh_l{i}'))
            nn.init.kaiming_normal_(getattr(self.rnn, f'weight_ih_l{i}'))
            nn.init.constant_(getattr(self.rnn, f'bias_hh_l{i}'), val=0)
            nn.init.constant_(getattr(self.rnn, f'bias_ih_l{i}'), val=0)
            getattr(self.rnn, f'bias_hh_l{i}').chunk(4)[1].fill_(1)  # hazard: GML105

            if self.rnn.bidirectional:
                nn.init.orthogonal_(getattr(self.rnn, f'weight_hh_l{i}_reverse'))
                nn.init.kaiming_normal_(getattr(self.rnn, f'weight_ih_l{i}_reverse'))
                nn.init.constant_(getattr(self.rnn, f'bias_hh_l{i}_reverse'), val=0)
                nn.init.constant_(getattr(self.rnn, f'bias_ih_l{i}_reverse'), val=0)
                getattr(self.rnn, f'bias_hh_l{i}_reverse').chunk(4)[1].fill_(1)


class BiDAF(nn.Module):
    def __init__(self, args):
        super(BiDAF, self).__init__()
        self.args = args
        self.context_LSTM = LSTM(input_size=args.hidden_size * 2, hidden_size=args.hidden_size,
                                 bidirectional=True, batch_first=True, dropout=args.dropout)


args = SimpleNamespace(hidden_size=8, dropout=0.2)
model = BiDAF(args)
print(model.context_LSTM.rnn.bias_hh_l0[8:16])
