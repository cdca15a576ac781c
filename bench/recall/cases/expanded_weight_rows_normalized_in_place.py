# source: https://github.com/pytorch/pytorch/issues/17260
# family: in-place writes on expanded tensors
# symptom: "Scaling a pytorch tensor by a python float radically changes normalization behavior": W is a row
#   expanded to two rows; `W /= norm` gives a different result from `WW = 1.0 * W; WW /= norm` (under torch 1.0 the
#   division went through the one shared row twice); the out-of-place `W = W / W_` agrees
# hazard: `W /= ...` on `torch.randn(1, 3).expand(2, 3)`, whose two rows are one row in memory
# runs-on-cpu: yes
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor refers to
#   a single memory location. Please clone() the tensor before performing the operation.
import torch as T

W = T.randn(1, 3).expand(2, 3)
WW = 1.0 * W
print((WW == W).sum())
W /= (((W**2).sum(1))**.5).unsqueeze(1)  # hazard: GML104
WW /= (((WW**2).sum(1))**.5).unsqueeze(1)
print((WW == W).sum())

# The effect is not small!
print((WW**2).sum())
print((W**2).sum())
