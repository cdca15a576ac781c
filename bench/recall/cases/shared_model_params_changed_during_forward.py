# source: https://github.com/pytorch/examples/issues/480
# family: tensors crossing processes: unsynchronised in-place updates of shared-memory tensors
# symptom: "Thread safe when using nn.module forwarding and optim step": with the model in shared memory, one
#   process adds to the parameters while the other is in the middle of forward, so forward uses a from before the
#   update and b from after it ("Current param 0 0" but "final param 0 1")
# hazard: model.b.add_(1) in one process while the other reads the shared parameters, with no lock
# runs-on-cpu: yes
# printed (torch 2.13): Current param  tensor(0) tensor(0) ... finish changing b ... final param  tensor(0) tensor(1); sum tensor(1)
import torch as t
import torch.multiprocessing as mp
from torch import nn
import time


class mymodel(nn.Module):
    def __init__(self):
        super(mymodel, self).__init__()
        self.a = t.tensor(0)
        self.b = t.tensor(0)

    def forward(self, X):
        print('Start forwarding')
        print('Current param ', self.a, self.b)
        y = self.a * X[0]
        print('Finish adding a')
        time.sleep(5)
        y = y + self.b * X[1]
        print('Finish adding b')
        print('final param ', self.a, self.b)
        return y.sum()


def train(model, idx):
    # Construct data_loader, optimizer, etc.
    if idx == 1:
        time.sleep(2)
        model.b.add_(1)  # hazard: GML208
        print('finish changing b')
        time.sleep(3)
        model.a.add_(1)
        print('finish changing a')
    else:
        print('sum', model(t.tensor([1, 1])))


model = mymodel()
# print(list(model.parameters()))
model.share_memory()
model.a.share_memory_()
model.b.share_memory_()
num_processes = 2


processes = []
for idx in range(num_processes):
    p = mp.Process(target=train, args=(model, idx))
    p.start()
    processes.append(p)
for p in processes:
    p.join()
