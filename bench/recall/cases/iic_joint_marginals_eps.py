# source: https://github.com/xu-ji/IIC/issues/116 (also https://github.com/xu-ji/IIC/pull/99)
# family: in-place write to an expanded tensor
# symptom: IID_loss raises "unsupported operation: more than one element of the written-to tensor
#   refers to a single memory location"; the suggested fix adds .clone() after each expand
# hazard: the masked write into the marginal made by expand(k, k)
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor refers to a single memory location. ...
import sys

import torch


def compute_joint(x_out, x_tf_out):
    bn, k = x_out.size()
    p_i_j = x_out.unsqueeze(2) * x_tf_out.unsqueeze(1)
    p_i_j = p_i_j.sum(dim=0)
    p_i_j = (p_i_j + p_i_j.t()) / 2.0
    return p_i_j / p_i_j.sum()


def IID_loss(x_out, x_tf_out, lamb=1.0, EPS=sys.float_info.epsilon):
    _, k = x_out.size()
    p_i_j = compute_joint(x_out, x_tf_out)
    p_i = p_i_j.sum(dim=1).view(k, 1).expand(k, k)
    p_j = p_i_j.sum(dim=0).view(1, k).expand(k, k)
    p_i_j[(p_i_j < EPS).data] = EPS
    p_j[(p_j < EPS).data] = EPS  # hazard: GML104
    p_i[(p_i < EPS).data] = EPS
    loss = -p_i_j * (torch.log(p_i_j) - lamb * torch.log(p_j) - lamb * torch.log(p_i))
    return loss.sum()


head = torch.nn.Linear(16, 10)
x = torch.randn(32, 16)
x_out = torch.softmax(head(x), dim=1)
x_tf_out = torch.softmax(head(x + 0.1 * torch.randn_like(x)), dim=1)
avg_loss_batch = IID_loss(x_out, x_tf_out)
avg_loss_batch.backward()
print(avg_loss_batch.item())
