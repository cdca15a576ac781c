# source: https://github.com/pytorch/pytorch/issues/69204
# family: in-place writes on expanded tensors / overlapping memory
# symptom: "How to assign tensor to tensor": a batch of identity matrices made with
#   `torch.eye(2).unsqueeze(0).expand(5, 2, 2)`, then filled row by row, raises "unsupported operation: more than one
#   element of the written-to tensor refers to a single memory location. Please clone() the tensor ..."
# hazard: `J[:, i, :] = ...`, a write into the expanded (stride-0) batch dimension
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.
import torch


def jacobian_rows(batch, n):
    J = torch.eye(n).unsqueeze(0).expand(batch, n, n)
    for i in range(n):
        J[:, i, :] = torch.randn([batch, n])  # hazard: GML104
    return J


print(jacobian_rows(5, 2))
