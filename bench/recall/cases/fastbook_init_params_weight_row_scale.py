# source: https://github.com/fastai/fastbook/pull/471 (code: 04_mnist_basics.ipynb, init_params and the `weights[0] *= 1.0001` cell)
# family: autograd in-place error on a leaf (a view of a tensor made a leaf by requires_grad_())
# symptom: the notebook cell `weights[0] *= 1.0001` raises "a view of a leaf Variable that requires grad is being used
#   in an in-place operation"; the PR changes it to `weights[0].data *= 1.0001`
# hazard: `weights[0] *= 1.0001` on the tensor init_params returned from `(torch.randn(size)*std).requires_grad_()`
# runs-on-cpu: yes (random stand-ins for the MNIST 3s and 7s)
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.
import torch

torch.manual_seed(42)
train_x = torch.rand(12, 28 * 28)
train_y = torch.tensor([1.0] * 6 + [0.0] * 6).unsqueeze(1)


def init_params(size, std=1.0):
    return (torch.randn(size) * std).requires_grad_()


def linear1(xb):
    return xb @ weights + bias


weights = init_params((28 * 28, 1))
bias = init_params(1)

preds = linear1(train_x)
corrects = (preds > 0.0).float() == train_y
print("accuracy", corrects.float().mean().item())

weights[0] *= 1.0001  # hazard: GML108
preds = linear1(train_x)
print("accuracy after the nudge", ((preds > 0.0).float() == train_y).float().mean().item())
