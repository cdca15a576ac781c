# source: https://github.com/pytorch/pytorch/issues/7860
# family: aliasing that silently changes values: a .detach() alias written in place
# symptom: after x_detach = x.detach() and x_detach.zero_(), x is zero too; out = (x * y).sum() is 0 and y.grad is
#   zero, with no error ("the results seem to contradict the description" of detach)
# hazard: x_detach.zero_() writes the memory of x, which is read afterwards
# runs-on-cpu: yes
# printed (torch 2.13): after the zero_, x: tensor([0., 0.], grad_fn=<MulBackward0>); out: tensor(0., grad_fn=<SumBackward0>); y.grad: tensor([0., 0.]); a.grad: tensor([2., 3.]); no error
import torch

print(torch.__version__)

a = torch.Tensor([1, 2])
a.requires_grad_(True)

b = torch.Tensor([2, 3])
b.requires_grad_(True)

y = torch.Tensor([1, 1])
y.requires_grad_(True)

x = a * b
x_detach = x.detach()

print("x = a * b (a = 2, b = 3)")
print("x require gard:", x.requires_grad)
print("x.detach() require gard:", x_detach.requires_grad)

print('-' * 6, "Before Fill", '-' * 6)
print("x:", x)
print("x.detach():", x_detach)

print('-' * 6, "After x.detach().zero_()", '-' * 6)
x_detach.zero_()  # hazard: GML103
print("x:", x)
print("x.detach():", x_detach)

print("out = (x * y).sum()")
print("x.backward()")
out = (x * y).sum()
out.backward()

print("out:", out)
print("x.grad:", x.grad)
print("y.grad:", y.grad)
print("a.grad:", a.grad)
print("b.grad:", b.grad)
