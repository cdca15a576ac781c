# source: https://github.com/wutong16/DistributionBalancedLoss/issues/20 (code: mllt/models/losses/resample_loss.py,
#   ResampleLoss.forward and logit_reg_functions)
# family: autograd in-place errors: a tensor saved for backward written in place
# symptom: "one of the variables needed for gradient computation has been modified by an inplace operation:
#   [torch.FloatTensor [64, 109]], which is output 0 of SigmoidBackward0, is at version 1; expected version 0" at
#   loss.backward(): the reporter's classifier ends in a sigmoid and the loss's logit regularisation adds the
#   negative-class bias to those scores in place
# hazard: `logits += self.neg_bias` in logit_reg_functions, on the scores the model's sigmoid saved
# runs-on-cpu: yes. A linear classifier with a sigmoid stands in for the reporter's model; class frequencies are
#   random instead of class_freq.pkl; the CUDA copies are dropped; binary cross-entropy for the criterion
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [64, 109]], which is output 0 of Sigmoid, is at version 1
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResampleLoss(nn.Module):
    def __init__(self, class_freq, neg_class_freq, logit_reg=dict(neg_scale=5.0, neg_bias=0.1)):
        super().__init__()
        self.class_freq = class_freq
        self.train_num = class_freq[0] + neg_class_freq[0]
        self.logit_reg = logit_reg
        self.neg_scale = logit_reg["neg_scale"]
        self.neg_bias = -torch.log(self.train_num / self.class_freq - 1) * logit_reg["neg_bias"] / self.neg_scale

    def forward(self, cls_score, label):
        weight = torch.ones_like(cls_score)
        cls_score, weight = self.logit_reg_functions(label.float(), cls_score, weight)
        return F.binary_cross_entropy_with_logits(cls_score, label.float(), weight=weight)

    def logit_reg_functions(self, labels, logits, weight=None):
        if not self.logit_reg:
            return logits, weight
        if "neg_bias" in self.logit_reg:
            logits += self.neg_bias  # hazard: GML109
        if "neg_scale" in self.logit_reg:
            logits = logits * (1 - labels) * self.neg_scale + logits * labels
            weight = weight / self.neg_scale * (1 - labels) + weight * labels
        return logits, weight


model = nn.Sequential(nn.Linear(32, 109), nn.Sigmoid())
freq = torch.randint(5, 50, (109,)).float()
criterion = ResampleLoss(freq, 200 - freq)
x, y = torch.randn(64, 32), torch.randint(0, 2, (64, 109))
loss = criterion(model(x), y)
loss.backward()
print("backward ran")
