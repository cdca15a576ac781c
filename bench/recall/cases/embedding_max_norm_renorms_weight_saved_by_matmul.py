# source: https://github.com/pytorch/pytorch/issues/26596 (the reporter's script; the documentation note added by
#   pytorch/pytorch#45595 describes the same hazard)
# family: autograd in-place errors: a tensor saved for backward then modified in place
# symptom: "nn.Embedding with max_norm shows unstable behavior and causes sometimes runtime error": loss.backward()
#   raises "one of the variables needed for gradient computation has been modified by an inplace operation"; the
#   error goes away without max_norm, or with Line a and Line b swapped
# hazard: `embedding(idx)` with max_norm renormalises the looked-up rows of embedding.weight in place, after
#   `embedding.weight @ W.t()` saved that weight for its backward
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: one of the variables needed for gradient computation has been modified by an
#   inplace operation: [torch.FloatTensor [3, 5]] is at version 2; expected version 1 instead. Hint: enable anomaly
#   detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True,
#   check_nan=False).
import torch
import torch.nn as nn

torch.manual_seed(0)
n, d, m = 3, 5, 7
batch_size = 11

embedding = nn.Embedding(n, d, max_norm=True)
W = torch.randn((m, d), requires_grad=True)
optimizer = torch.optim.Adam(list(embedding.parameters()) + [W], lr=1e-3)

optimizer.zero_grad()
idx = torch.tensor([1, 2])

a = embedding.weight @ W.t()  # Line a
b = embedding(idx) @ W.t()  # hazard: GML109

out = (a.unsqueeze(0) + b.unsqueeze(1))
loss = out.sigmoid().prod()
loss.backward()
optimizer.step()
