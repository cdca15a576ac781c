# source: https://github.com/pytorch/pytorch/issues/53348
# family: autograd in-place errors: writes on views of a leaf that requires grad
# symptom: "How to obtain the gradient of a tensor when in-place operation included?": a matmul written as five
#   loops accumulates into res_torch = torch.zeros(..., requires_grad=True) element by element; it raises
#   "RuntimeError: leaf variable has been moved into the graph interior"
# hazard: `res_torch[b][c][h][k] = ...`, an item write on a view of the leaf res_torch
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.
import torch
ma = torch.randn(2,3,3,4).requires_grad_(True)
mb = torch.randn(2,3,4,5).requires_grad_(True)
B,C,H,W = ma.shape
B,C,W,K = mb.shape
res_torch = torch.zeros((B,C,H,K), requires_grad=True)
for b in range(B):
    for c in range(C):
        for h in range(H):
            for k in range(K):
                for r in range(W):
                    res_torch[b][c][h][k] = res_torch[b][c][h][k] +  ma[b][c][h][r] * mb[b][c][r][k]  # hazard: GML108
res_torch.sum().backward()
print(ma.grad)
