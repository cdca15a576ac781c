# source: https://github.com/pytorch/examples/pull/779
# family: autograd in-place error on a leaf that requires grad
# symptom: the word_language_model training loop's `p.add_(-lr, p.grad)` raises
#   "a leaf Variable that requires grad is being used in an in-place operation"
# hazard: the manual SGD update on every parameter, outside torch.no_grad()
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, inp, hidden):
        output, hidden = self.rnn(self.encoder(inp), hidden)
        return self.decoder(output), hidden

    def init_hidden(self, bsz):
        return (torch.zeros(1, bsz, 8), torch.zeros(1, bsz, 8))


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


def train(model, train_data, lr=20.0, clip=0.25, bptt=5):
    criterion = nn.CrossEntropyLoss()
    hidden = model.init_hidden(train_data.size(1))
    for i in range(0, train_data.size(0) - 1, bptt):
        data, targets = train_data[i:i + bptt], train_data[i + 1:i + 1 + bptt]
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data[: len(targets)], hidden)
        loss = criterion(output.view(-1, 10), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.add_(p.grad, alpha=-lr)  # hazard: GML108
    return loss.item()


print(train(RNNModel(10, 8, 8), torch.randint(0, 10, (21, 4))))
