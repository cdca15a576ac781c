# source: https://github.com/Project-MONAI/MONAI/issues/7407
# family: environment variables set too late
# symptom: "CUDA_VISIBLE_DEVICES setting ignored after `import monai`": after torch.cuda.device_count() and
#   `import monai`, setting CUDA_VISIBLE_DEVICES="0" has no effect and torch.cuda.set_device(1) still succeeds
# hazard: CUDA_VISIBLE_DEVICES set after torch.cuda.device_count() (and monai's import) read the devices
# runs-on-cpu: no (needs two GPUs and monai)
# printed (torch 2.13): - (CUDA only)
import os
import torch
print('before import monai:', torch.cuda.device_count())
import monai

os.environ["CUDA_VISIBLE_DEVICES"] = "0"  # hazard: GML301
print('after import monai:')
torch.cuda.set_device(1)  # should failed
