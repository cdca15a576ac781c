# source: https://github.com/BierOne/bottom-up-attention-vqa/issues/6 (code: model/classifier.py, model/fc.py,
#   model/base_model.py)
# family: autograd in-place errors: a saved tensor written in place (an in-place Dropout after a ReLU in a Sequential)
# symptom: training fails in backward with "one of the variables needed for gradient computation has been modified
#   by an inplace operation: [torch.cuda.FloatTensor [512, 2048]], which is output 0 of ReluBackward0, is at version
#   1"; the answer: `nn.Dropout(dropout, inplace=True)` in model/classifier.py should be inplace=False
# hazard: the classifier's Sequential applies Dropout(inplace=True) to the output of the ReLU before it, which ReLU
#   saved for its backward
# runs-on-cpu: yes. Random question and image features stand in for the GRU and Faster R-CNN outputs; FCNet written
#   without weight_norm
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [4, 32]], which is output 0 of Relu, is at version 1; expected version 0
#   instead. ...
import torch
import torch.nn as nn


class FCNet(nn.Module):
    def __init__(self, dims, dropout=0.0):
        super(FCNet, self).__init__()
        layers = []
        for i in range(len(dims) - 1):
            layers.append(nn.Dropout(dropout))
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            layers.append(nn.ReLU())
        self.main = nn.Sequential(*layers)

    def forward(self, x):
        return self.main(x)


class SimpleClassifier(nn.Module):
    def __init__(self, in_dim, hid_dim, out_dim, dropout=0.0):
        super(SimpleClassifier, self).__init__()
        self.q_net = FCNet([in_dim[0], hid_dim[0]], dropout)
        self.v_net = FCNet([in_dim[1], hid_dim[0]], dropout)
        self.main = nn.Sequential(
            nn.Linear(hid_dim[0], hid_dim[1]),
            nn.ReLU(),
            nn.Dropout(dropout, inplace=True),  # hazard: GML109
            nn.Linear(hid_dim[1], out_dim)
        )

    def forward(self, q_emb, v_emb):
        joint_repr = self.q_net(q_emb) * self.v_net(v_emb)
        logits = self.main(joint_repr)
        return logits


classifier = SimpleClassifier(in_dim=(16, 24), hid_dim=(16, 32), out_dim=10, dropout=0.5)
q_emb, v_emb = torch.randn(4, 16), torch.randn(4, 24)
labels = torch.rand(4, 10)
logits = classifier(q_emb, v_emb)
loss = nn.functional.binary_cross_entropy_with_logits(logits, labels)
loss.backward()
print("backward done")
