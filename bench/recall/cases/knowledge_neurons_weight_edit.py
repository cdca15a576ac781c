# source: https://github.com/Hunter-DDM/knowledge-neurons/issues/14
# family: autograd in-place error on a view of a leaf that requires grad
# symptom: 6_edit_knowledge_sampled.py's `...output.dense.weight[:, pos] -= ori_pred_emb * lambda`
#   raises "a view of a leaf Variable that requires grad is being used in an in-place operation"
# hazard: the column update through the nested module path, outside torch.no_grad()
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.
import torch
import torch.nn as nn


class Output(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.dense = nn.Linear(inter, hidden)


class Layer(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.output = Output(hidden, inter)


class Encoder(nn.Module):
    def __init__(self, n_layers, hidden, inter):
        super().__init__()
        self.layer = nn.ModuleList(Layer(hidden, inter) for _ in range(n_layers))


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder(3, 16, 64)


class MaskedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = Bert()
        self.word_embeddings = nn.Embedding(100, 16)


model = MaskedLM()
kn_bag = [(1, 5), (2, 17), (2, 40)]
ori_pred_emb = model.word_embeddings.weight[7]
tgt_emb = model.word_embeddings.weight[42]
lambda_list_1 = [1.0, 2.0, 3.0]
lambda_list_2 = [1.0, 2.0, 3.0]
for i, (layer, pos) in enumerate(kn_bag):
    model.bert.encoder.layer[layer].output.dense.weight[:, pos] -= ori_pred_emb * lambda_list_1[i]  # hazard: GML108
    model.bert.encoder.layer[layer].output.dense.weight[:, pos] += tgt_emb * lambda_list_2[i]
print("edited")
