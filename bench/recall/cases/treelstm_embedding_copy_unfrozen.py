# source: https://github.com/dasguptar/treelstm.pytorch/pull/26 (code: treelstm/model.py, SimilarityTreeLSTM.__init__,
#   and main.py, which builds the model with the GloVe-initialised embedding, as of the PyTorch 0.4 port)
# family: autograd in-place errors: a leaf that requires grad written in place
# symptom: "when not to freeze the embedding": "self.emb.weight.copy_(init_emb) RuntimeError: a leaf Variable that
#   requires grad has been used in an in-place operation."; the maintainer: "When switching to PyTorch 0.4.0, I
#   hurriedly removed all .data, and this was a mistake" (the fix goes back to `weight.data.copy_`)
# hazard: `self.emb.weight.copy_(init_emb)` in __init__ when `freeze` is False (the embedding weight then requires grad)
# runs-on-cpu: yes. A random matrix stands in for the GloVe vectors; ChildSumTreeLSTM and Similarity are reduced to
#   the layers __init__ builds
# printed (torch 2.13): RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
import torch
import torch.nn as nn

PAD = 0


class ChildSumTreeLSTM(nn.Module):
    def __init__(self, in_dim, mem_dim):
        super(ChildSumTreeLSTM, self).__init__()
        self.ioux = nn.Linear(in_dim, 3 * mem_dim)
        self.iouh = nn.Linear(mem_dim, 3 * mem_dim)
        self.fx = nn.Linear(in_dim, mem_dim)
        self.fh = nn.Linear(mem_dim, mem_dim)


class Similarity(nn.Module):
    def __init__(self, mem_dim, hidden_dim, num_classes):
        super(Similarity, self).__init__()
        self.wh = nn.Linear(2 * mem_dim, hidden_dim)
        self.wp = nn.Linear(hidden_dim, num_classes)


class SimilarityTreeLSTM(nn.Module):
    def __init__(self, vocab_size, in_dim, mem_dim, hidden_dim, num_classes, sparsity, freeze, init_emb):
        super(SimilarityTreeLSTM, self).__init__()
        self.emb = nn.Embedding(vocab_size, in_dim, padding_idx=PAD, sparse=sparsity)
        if freeze:
            self.emb.weight.requires_grad = False
        self.emb.weight.copy_(init_emb)  # hazard: GML108
        self.childsumtreelstm = ChildSumTreeLSTM(in_dim, mem_dim)
        self.similarity = Similarity(mem_dim, hidden_dim, num_classes)


def main(freeze_embed=False):
    vocab_size, input_dim = 20, 6
    emb = torch.Tensor(vocab_size, input_dim).normal_(-0.05, 0.05)
    for idx in range(4):
        emb[idx].zero_()
    model = SimilarityTreeLSTM(vocab_size, input_dim, 5, 4, 5, False, freeze_embed,
                               emb)
    print(model.emb.weight[4])


if __name__ == "__main__":
    main()
