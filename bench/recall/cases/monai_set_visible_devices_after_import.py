# source: https://github.com/Project-MONAI/MONAI/issues/2167 (code: monai/config/deviceconfig.py, set_visible_devices,
#   and monai/data/test_time_augmentation.py of 0.5.0, the import-time CUDA query found for MONAI#2161)
# family: environment variables set too late
# symptom: "delete set_visible_devices?": "when setting the device after importing monai (and therefore torch), it
#   seems to be ignored as the following is fine: import monai; monai.config.deviceconfig.set_visible_devices(0);
#   import torch; a=torch.rand((1), device='cuda:1'); print(a.device)" prints cuda:1 instead of failing with
#   "invalid device ordinal"
# hazard: set_visible_devices writes CUDA_VISIBLE_DEVICES after `import monai` has asked torch.cuda.is_available()
#   (a default argument of TestTimeAugmentation.__init__), so the driver already sees every GPU
# runs-on-cpu: no (needs two GPUs). monai's two modules are written out in the file, in the order `import monai`
#   runs them
# printed (torch 2.13): - (CUDA only)
import os

import torch


class TestTimeAugmentation:  # monai/data/test_time_augmentation.py
    def __init__(self, transform, batch_size, num_workers, inferrer_fn,
                 device="cuda" if torch.cuda.is_available() else "cpu", image_key="image", label_key="label"):
        self.transform = transform
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.inferrer_fn = inferrer_fn
        self.device = device


def set_visible_devices(*dev_inds):  # monai/config/deviceconfig.py
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, dev_inds))  # hazard: GML301


set_visible_devices(0)  # hazard-via: GML301
a = torch.rand((1), device='cuda:1')
print(a.device)
