# source: https://github.com/Project-MONAI/MONAI/issues/2161 (code: monai/data/test_time_augmentation.py of 0.5.0,
#   whose default argument the fix, MONAI#2174, removes; and the tutorial 2d_segmentation/torch/
#   unet_training_array.py with the reporter's line added after `def main(tempdir):`)
# family: environment variables set too late
# symptom: "CUDA_VISIBLE_DEVICES environ setting not work in ver. 0.5.0": with `os.environ["CUDA_VISIBLE_DEVICES"] =
#   '0'` at the top of main, 0.4.x detects only GPU 0, 0.5.0 detects all GPUs; the fix: "In TestTimeAugmentation, I
#   called `torch.cuda` as a default argument to a constructor ... we shouldn't call `torch.cuda.` during `import
#   monai`"
# hazard: CUDA_VISIBLE_DEVICES set in main, after `import monai` evaluated `torch.cuda.is_available()` as a default
#   argument of TestTimeAugmentation.__init__ (which initialises the CUDA driver and fixes the visible devices)
# runs-on-cpu: no (needs two GPUs). The class that `import monai` defines is written out in the file; the tutorial's
#   data, transforms and training loop are reduced to building the UNet on the device
# printed (torch 2.13): - (CUDA only)
import os
import sys
import tempfile
from typing import Callable, Optional, Union

import torch


class TestTimeAugmentation:  # monai/data/test_time_augmentation.py, defined when `import monai` runs
    def __init__(
        self,
        transform,
        batch_size: int,
        num_workers: int,
        inferrer_fn: Callable,
        device: Optional[Union[str, torch.device]] = "cuda" if torch.cuda.is_available() else "cpu",
        image_key="image",
        label_key="label",
    ) -> None:
        self.transform = transform
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.inferrer_fn = inferrer_fn
        self.device = device


def main(tempdir):
    os.environ["CUDA_VISIBLE_DEVICES"] = '0'  # hazard: GML301
    print("MONAI version: 0.5.0", file=sys.stdout, flush=True)
    print(f"generating synthetic data to {tempdir} (this may take a while)")
    device = torch.device("cuda:0")
    model = torch.nn.Conv2d(1, 1, 3).to(device)
    print("visible GPUs:", torch.cuda.device_count())


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tempdir:
        main(tempdir)
