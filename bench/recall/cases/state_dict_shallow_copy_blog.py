# source: https://joneswong.github.io/daily/python/pytorch/2022/03/16/pytorch-mistakes-people-ignored.html ("When is deep copy and when is shallow copy?")
# family: aliasing that silently changes values: a state_dict() kept as a snapshot
# symptom: a = m.state_dict() is printed before and after halving the parameters through .data; both prints of a
#   follow the model ("state_dict() is shallow copy"); only after a = copy.deepcopy(a) do they part
# hazard: a = m.state_dict() kept while the parameters are written in place
# runs-on-cpu: yes
# printed (torch 2.13): after the halving, m.state_dict() and a print the same halved values (e.g. fc.bias tensor([ 0.0981, -0.0919]) twice); after the deepcopy the last pair differs
import copy

import torch


class LogisticRegression(torch.nn.Module):
    def __init__(self, in_channels, class_num):
        super(LogisticRegression, self).__init__()
        self.fc = torch.nn.Linear(in_channels, class_num)

    def forward(self, x):
        return self.fc(x)


m = LogisticRegression(2, 2)
a = m.state_dict()  # hazard: GML102
print(m.state_dict())
print(a)
print("\n\n")


for v in m.parameters():
    #v[0] = 123.0
    #v[0].data = torch.Tensor([123.0])
    v.data -= 0.5 * v.data
print("state_dict() is shallow copy:")
print(m.state_dict())
print(a)
print("\n\n")

# whether to comment this line matters!!!!!!
a = copy.deepcopy(a)
m.load_state_dict(a)

for k in a:
    a[k].data -= 0.5 * a[k].data
print("load_state_dict() is ? copy:")
print(m.state_dict())
print(a)
