# source: https://github.com/pytorch/pytorch/issues/104801 (the failing form in the maintainer's answer)
# family: environment variables set too late
# symptom: "INTERNAL ASSERT FAILED at ../c10/cuda/CUDACachingAllocator.cpp:644 ... Allocator backend parsed at
#   runtime != allocator backend parsed at load time"; the answer: the config is set too late, after `import torch`;
#   set before the import it works
# hazard: PYTORCH_CUDA_ALLOC_CONF set through os.environ after `import torch` read the allocator backend
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import torch

import os
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"  # hazard: GML302

x = torch.randn(1).cuda()
print(x)
