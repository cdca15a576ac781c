# source: https://github.com/pytorch/pytorch/issues/128819 (the reporter's gating code is described, not shown; the
#   program is the reproduction the maintainers posted in the thread, with the reporter's availability check)
# family: environment variables set too late
# symptom: "Environment gating of CUDA_VISIBLE_DEVICES returns a CUDA initialization error": after
#   torch.cuda.device_count() (8 GPUs) the script sets CUDA_VISIBLE_DEVICES="0", and its first CUDA tensor fails in
#   torch's lazy init with "device >= 0 && device < num_gpus INTERNAL ASSERT FAILED" (torch 2.2 to 2.3; 2.4 fixed the
#   assert, the variable still has no effect on the count already taken)
# hazard: `os.environ["CUDA_VISIBLE_DEVICES"] = "0"` after torch.cuda.device_count() read the device list
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import os

import torch

print(torch.cuda.is_available())
print(torch.__version__)

print(torch.cuda.device_count(), torch.__version__)
os.environ["CUDA_VISIBLE_DEVICES"] = "0"  # hazard: GML301
print(torch.empty(2, device="cuda"))
