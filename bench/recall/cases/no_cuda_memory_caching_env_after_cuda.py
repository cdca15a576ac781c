# source: https://github.com/pytorch/pytorch/issues/92074
# family: environment variables set too late
# symptom: "PYTORCH_NO_CUDA_MEMORY_CACHING=1 doesn't work": the reporter's instrumented build prints force_uncached 0
#   although the variable is set; the value is read once, by the first CUDA allocation, and cached in a static
# hazard: PYTORCH_NO_CUDA_MEMORY_CACHING set through os.environ after `a.to("cuda")` initialised the allocator
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import torch
import os

a = torch.rand((2,2))
b = a.to("cuda")

print("set PYTORCH_NO_CUDA_MEMORY_CACHING=1")
os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"]="1"  # hazard: GML302
c = torch.rand((2,2))
d  = c.to("cuda")
