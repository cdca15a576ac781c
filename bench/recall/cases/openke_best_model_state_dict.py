# source: https://github.com/thunlp/OpenKE/pull/131 (code: config/Config.py, Config.run, before the fix)
# family: aliasing that silently changes values: a state_dict() kept as a snapshot
# symptom: "it needs to deepcopy the `self.trainModel.state_dict()` for `best_model`, otherwise, the `best_model` is
#   always the same as the newest `self.trainModel`, instead of the best model during training"
# hazard: best_model = self.trainModel.state_dict() kept while later epochs' optimizer steps write the parameters
# runs-on-cpu: yes (a small TransE stands in for the library's models, valid() for its C++ hit@10 evaluation)
# printed (torch 2.13): Best epoch is 0 | hit@10 of valid set is 0.900000, then "stored at epoch 0: -1.110215, in best_model now: -1.000840"
import torch
import torch.nn as nn


class TransE(nn.Module):
    def __init__(self, ent_tot, rel_tot, dim=8):
        super().__init__()
        self.ent_embeddings = nn.Embedding(ent_tot, dim)
        self.rel_embeddings = nn.Embedding(rel_tot, dim)

    def forward(self, h, t, r):
        return (self.ent_embeddings(h) + self.rel_embeddings(r) - self.ent_embeddings(t)).norm(p=1, dim=-1)


class Config(object):
    def __init__(self, train_times=6, valid_steps=1, early_stopping_patience=10):
        self.train_times, self.valid_steps = train_times, valid_steps
        self.early_stopping_patience = early_stopping_patience
        self.trainModel = TransE(20, 3)
        self.optimizer = torch.optim.SGD(self.trainModel.parameters(), lr=0.5)
        self.batch = [torch.randint(0, 20, (32,)), torch.randint(0, 20, (32,)), torch.randint(0, 3, (32,))]

    def train_one_step(self):
        self.optimizer.zero_grad()
        loss = self.trainModel(*self.batch).mean()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def valid(self, model):
        return [0.9, 0.8, 0.2, 0.1, 0.1, 0.1][self.epoch]  # hit@10 is best after the first epoch

    def run(self):
        best_epoch, best_hit10, best_model, bad_counts = 0, 0.0, None, 0
        for epoch in range(self.train_times):
            self.epoch = epoch
            res = self.train_one_step()
            if (epoch + 1) % self.valid_steps == 0:
                hit10 = self.valid(self.trainModel)
                if hit10 > best_hit10:
                    best_hit10 = hit10
                    best_epoch = epoch
                    best_model = self.trainModel.state_dict()  # hazard: GML102
                    first = best_model['ent_embeddings.weight'][0, 0].item()
                    bad_counts = 0
                else:
                    bad_counts += 1
                if bad_counts == self.early_stopping_patience:
                    break
        print("Best epoch is %d | hit@10 of valid set is %f" % (best_epoch, best_hit10))
        print("stored at epoch %d: %f, in best_model now: %f" % (best_epoch, first,
                                                                 best_model['ent_embeddings.weight'][0, 0].item()))


torch.manual_seed(0)
Config().run()
