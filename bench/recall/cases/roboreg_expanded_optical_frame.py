# source: https://github.com/roboreg/roboreg/issues/126 (code: lbr-stack/roboreg roboreg/util/transform.py, generate_ht_optical)
# family: in-place write on an expanded (stride-0) tensor
# symptom: "Memory reference bug": generate_ht_optical raises "unsupported operation: more than one element of the
#   written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation."
#   at `ht_optical[..., 0, 2] = (` when a batch size is given
# hazard: item assignment into ht_optical after unsqueeze(0).expand(batch_size, -1, -1)
# runs-on-cpu: yes (device="cpu" passed; the default is "cuda")
# printed (torch 2.13): RuntimeError: unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.
from typing import Optional

import torch


def generate_ht_optical(
    batch_size: Optional[int] = None,
    dtype: Optional[torch.dtype] = torch.float32,
    device: Optional[torch.device] = "cuda",
) -> torch.Tensor:
    ht_optical = torch.zeros(4, 4, dtype=dtype, device=device)
    if batch_size is not None:
        ht_optical = ht_optical.unsqueeze(0).expand(batch_size, -1, -1)
    ht_optical[..., 0, 2] = (  # hazard: GML104
        1.0  # OpenCV-oriented optical frame, in quaternions: [0.5, -0.5, 0.5, -0.5] (w, x, y, z)
    )
    ht_optical[..., 1, 0] = -1.0
    ht_optical[..., 2, 1] = -1.0
    ht_optical[..., 3, 3] = 1.0
    return ht_optical


print(generate_ht_optical(device="cpu"))
try:
    print(generate_ht_optical(batch_size=2, device="cpu"))
except RuntimeError as error:
    print("RuntimeError:", error)
