# source: https://github.com/pytorch/pytorch/issues/95073 (the test script in the comment of insujang, 2023-06-11)
# family: environment variables set too late
# symptom: "`torch.cuda.device_count` cached return value does not reflect environment changes": the script prints
#   the device count, then sets CUDA_VISIBLE_DEVICES="1,2" and prints the count again: unchanged (the maintainer:
#   changes after the context was initialised do not affect the devices)
# hazard: `os.environ["CUDA_VISIBLE_DEVICES"] = "1,2"` after torch.cuda.device_count() initialised the driver
# runs-on-cpu: no (CUDA)
# printed (torch 2.13): - (CUDA only)
import os

import torch

print(f"CUDA_VISIBLE_DEVICES: {os.getenv('CUDA_VISIBLE_DEVICES')}")
print(f"torch cuda device count: {torch.cuda.device_count()}")

# change the environment variable within the run
os.environ["CUDA_VISIBLE_DEVICES"] = "1,2"  # hazard: GML301
print(f"CUDA_VISIBLE_DEVICES: {os.getenv('CUDA_VISIBLE_DEVICES')}")
print(f"torch cuda device count: {torch.cuda.device_count()}")
x = torch.ones(2, device="cuda:1")
print(x.device)
