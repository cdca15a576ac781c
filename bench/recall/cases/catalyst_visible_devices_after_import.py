# source: https://github.com/catalyst-team/catalyst/issues/1451
# family: environment variables set too late
# symptom: "Importing DistributedSamplerWrapper will invalidate the setting CUDA_VISIBLE_DEVICE": with the import,
#   torch.cuda.device_count() prints 2 after os.environ["CUDA_VISIBLE_DEVICES"] = "0"; without it, 1
# hazard: CUDA_VISIBLE_DEVICES set after an import that initialised CUDA
# runs-on-cpu: no (needs two GPUs and catalyst)
# printed (torch 2.13): - (CUDA only)
import os
import torch
from catalyst.data.sampler import DistributedSamplerWrapper

os.environ["CUDA_VISIBLE_DEVICES"] = "0"  # hazard: GML301
device_num = torch.cuda.device_count()
print(device_num)  # Ouput: 2
