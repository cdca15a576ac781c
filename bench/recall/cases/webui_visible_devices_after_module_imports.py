# source: https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/442 (code: webui.py of commit e94bc39, the
#   lines the reporter quotes, and modules/devices.py get_optimal_device, which modules/shared.py runs when imported)
# family: environment variables set too late
# symptom: "os.environ["CUDA_VISIBLE_DEVICES"] = "1" no longer works after recent updates": the line sits between
#   `import modules.img2img` and `modules.codeformer_model.setup_codeformer()`, and the program always uses GPU0;
#   the maintainer: it works only "before all torch stuff"
# hazard: CUDA_VISIBLE_DEVICES set after the imported modules asked torch.cuda.is_available() (which initialises
#   the CUDA driver, fixing the visible devices)
# runs-on-cpu: no (needs two GPUs). The modules' import-time code is written out in the file: devices.py's
#   get_optimal_device and the `device = ...` line of shared.py; setup_codeformer is reduced to building its net
# printed (torch 2.13): - (CUDA only)
import os
import threading

import torch


def get_optimal_device():  # modules/devices.py
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


device = get_optimal_device()  # modules/shared.py, run by `import modules.shared as shared` in webui.py

os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # hazard: GML301


def setup_codeformer():  # modules/codeformer_model.py
    net = torch.nn.Conv2d(3, 3, 3).to(device)
    return net


codeformer = setup_codeformer()
queue_lock = threading.Lock()
print(torch.cuda.current_device(), torch.cuda.get_device_name(device))
