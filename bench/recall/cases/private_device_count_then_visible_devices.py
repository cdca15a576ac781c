# source: https://github.com/pytorch/pytorch/issues/159641
# family: environment variables set too late
# symptom: "possibly a bug in torch._C._cuda_getDeviceCount": once it was called (flash-attention calls it at import),
#   later changes of CUDA_VISIBLE_DEVICES have no effect: it still answers 2 after CUDA_VISIBLE_DEVICES="0", and
#   every per-process model lands on GPU 0
# hazard: the second `os.environ["CUDA_VISIBLE_DEVICES"] = ...`, after `torch._C._cuda_getDeviceCount()` ran
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import os

import torch


def load_on_visible(gpu_ids):
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu_ids  # hazard: GML301
    model = torch.nn.Linear(8, 8).to("cuda:0")
    return model


os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
print(torch._C._cuda_getDeviceCount())  # result: 2
model = load_on_visible("1")
print(torch._C._cuda_getDeviceCount(), next(model.parameters()).device)  # still 2, and on the first GPU
