# source: https://github.com/BaiTheBest/SparseLLM/issues/13
# family: autograd in-place error on a leaf that requires grad
# symptom: `s_batch -= s_learning_rate * s_batch.grad` raises
#   "a leaf Variable that requires grad is being used in an in-place operation"
# hazard: the manual gradient step on the leaf, outside torch.no_grad()
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
import torch

torch.manual_seed(0)
W = torch.randn(8, 16)
X = torch.randn(16, 32)
target = torch.randn(8, 32)
s = torch.zeros(8, 32, dtype=torch.float16)
s_learning_rate = 0.01
chunk_size = 8

for start in range(0, s.shape[1], chunk_size):
    chunk = slice(start, start + chunk_size)
    s_batch = s[:, chunk].float().clone().requires_grad_(True)
    for _ in range(3):
        pred = torch.relu(W @ X[:, chunk])
        loss_s = ((pred - s_batch) ** 2).mean() + ((s_batch - target[:, chunk]) ** 2).mean()
        loss_s.backward()
        s_batch -= s_learning_rate * s_batch.grad  # hazard: GML108
        s_batch.grad.zero_()
    s[:, chunk] = s_batch.detach().to(dtype=torch.float16)
print(s.float().abs().sum())
