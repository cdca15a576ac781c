# source: https://github.com/Atcold/NYU-DLSP20/issues/765
# family: autograd in-place error on a view of a leaf that requires grad
# symptom: building TransformerClassifier raises, at `E[:, 0::2] = torch.FloatTensor(np.sin(...))`,
#   "a view of a leaf Variable that requires grad is being used in an in-place operation"
# hazard: the strided-slice write into the embedding weight handed to the helper from __init__
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.
import numpy as np
import torch
import torch.nn as nn


def create_sinusoidal_embeddings(nb_p, dim, E):
    theta = np.array([[p / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for p in range(nb_p)])
    E[:, 0::2] = torch.FloatTensor(np.sin(theta[:, 0::2]))  # hazard: GML108
    E[:, 1::2] = torch.FloatTensor(np.cos(theta[:, 1::2]))
    E.detach_()
    E.requires_grad = False


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab_size, max_position_embeddings, p):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, d_model, padding_idx=1)
        self.position_embeddings = nn.Embedding(max_position_embeddings, d_model)
        create_sinusoidal_embeddings(nb_p=max_position_embeddings, dim=d_model, E=self.position_embeddings.weight)  # hazard-via: GML108
        self.LayerNorm = nn.LayerNorm(d_model, eps=1e-12)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.size(1)).unsqueeze(0).expand_as(input_ids)
        return self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(positions))


class TransformerClassifier(nn.Module):
    def __init__(self, d_model, input_vocab_size, num_answers, maximum_position_encoding=64):
        super().__init__()
        self.embed = Embeddings(d_model, input_vocab_size, maximum_position_encoding, 0.1)
        self.dense = nn.Linear(d_model, num_answers)

    def forward(self, x):
        return self.dense(self.embed(x).max(dim=1)[0])


model = TransformerClassifier(d_model=32, input_vocab_size=500, num_answers=2)
print(model(torch.randint(0, 500, (2, 10))).shape)
