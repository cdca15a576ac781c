from collections.abc import Iterator

from gpumem_lint.context import FileContext
from gpumem_lint.diagnostics import Applicability, Severity
from gpumem_lint.rules._env_lockin import ENV_TRIGGERS, ENV_WRITE, late_env_writes
from gpumem_lint.rules.base import Invalid, Report, Rule


class CudaEnvSetAfterCudaInit(Rule):
    """
    ## What it does
    Flags a write to `CUDA_VISIBLE_DEVICES`, `CUDA_DEVICE_ORDER` (or ROCm's
    `HIP_VISIBLE_DEVICES`/`ROCR_VISIBLE_DEVICES`) after the CUDA driver was initialised, and to
    `CUDA_LAUNCH_BLOCKING` after a CUDA context was created, on some path through the program:
    in the same function, in a function it called first, at module level, or when a first-party
    module it imports ran CUDA code at import time.

    The driver initialises earlier than most code expects: `torch.cuda.is_available()`,
    `get_arch_list()`, `GradScaler("cuda")`, `autocast("cuda")` (unless written with
    `enabled=False`: then neither asks `is_available()`) and the binding
    `torch._C._cuda_getDeviceCount()` that `is_available()` calls all run `cuInit`;
    `torch.device("cuda")`, `torch.cuda.device_count()` (NVML), `is_initialized()` and
    `manual_seed` do not. Writes before `import torch`, right after it, or before any such call
    are fine, as is a launcher that starts processes after the write (the children read their
    environment afresh). A function the module calls at import (`main()` without a `__main__`
    guard) runs in that call: what its body does after the write does not precede it. Nor do two
    tests of one unchanged value in one call take opposite arms (`if notebook_mode == False:` ...
    `if notebook_mode:`, each calling the setup), nor do both hold of two comparisons of one unchanged
    value with integers that exclude each other (`if len(ids) > 1:` ... `if len(ids) == 1:`); a value
    bound once before the first test, outside any block, is unchanged. Importing a package that
    initialises CUDA as it is imported (catalyst, bitsandbytes, deepspeed, `xformers.ops`, `mmcv.ops`:
    read from their source, the lock-in table's `package_cuda_import`) initialises the driver. A parameter's
    default is evaluated as its `def` runs: in a class body or at module level, at import
    (`device="cuda" if torch.cuda.is_available() else "cpu"`); inside a function, when it is called.

    ## Why is this bad?
    The driver enumerates devices once, at `cuInit`. Measured on an H200 with torch 2.11
    (`bench/gpu/lockin_probe.json`, [lock-in table](../gpumem_lint/knowledge/lockin.toml)):
    setting `CUDA_VISIBLE_DEVICES=""` after `is_available()`, `set_device(0)` or the first
    allocation leaves `torch.cuda.device_count()` at 0 while allocations still succeed on the
    old device — torch and CUDA disagree; after `get_device_properties(0)` the write is simply
    ignored. `CUDA_LAUNCH_BLOCKING=1` set after the context exists leaves launches asynchronous
    (0.6 ms instead of 700 ms for a 10⁹-cycle kernel), so the error you were chasing is still
    reported at the wrong line.

    ## Known problems
    A call on the right of `and` / `or` runs only when the left allows it: `device == "" and not
    torch.cuda.is_available()` asks nothing of CUDA in an `elif device:` arm (a test that needs `device`
    false, where the arm holds it true); other tests are taken to go either way.
    The order is followed through calls to functions and methods of the same file, constructors
    of its classes, and first-party modules (inside the project root, three imports deep,
    namespace packages without `__init__.py` included): what they run at import and in the
    functions called from them. A write in a module-level function, or in a method its class's
    `__init__` calls, is also late when another first-party module ran the event before calling
    that function or constructing the class, a subclass (two levels down) or a name bound to one
    (`Exp = Exp_Main`; `exp = Exp(args)` after `torch.cuda.is_available()`, the pattern of many
    forecasting repositories); the message names that call. Third-party code is not read.
    `.to(x)` and `device=x` count as allocations when `x` reads as a CUDA device (`"cuda"`, `"cuda:0"`, a name containing `device`, `cuda`,
    `gpu` or `rank`). On ROCm, HIP reads `HIP_VISIBLE_DEVICES` or `CUDA_VISIBLE_DEVICES` as one
    device mask, so writing one with the other's value (`os.environ.pop("HIP_VISIBLE_DEVICES")`)
    renames the mask in effect and is not reported (`same_mask` in the lock-in table), also through
    local names whose every assignment in the function reads one of the masks (`val =
    os.environ.pop("HIP_VISIBLE_DEVICES")`, then `os.environ["CUDA_VISIBLE_DEVICES"] = val`); so is
    `ROCR_VISIBLE_DEVICES`, the mask ROCr applies below HIP, when it is set alone.

    ## Example
    ```python
    import os
    import torch

    def main(args):
        device = "cuda" if torch.cuda.is_available() else "cpu"
        os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus
        model = Net().to(device)
    ```

    ## Use instead
    ```python
    import os
    import torch

    def main(args):
        os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus  # before the first CUDA call
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = Net().to(device)
    ```
    or set it in the launcher (`CUDA_VISIBLE_DEVICES=0,1 python train.py`), or pick the device
    with `torch.cuda.set_device(i)`.

    ## Fix safety
    The fix moves the write above the statement of the same block that initialised CUDA
    (`torch.cuda.is_available()`, the first `.cuda()`): a one-line write, or an `if` without
    `else` that holds only environment writes, when nothing in between binds a name it reads and
    `os` is imported above. It is unsafe: code in between then sees the new value too, and the
    earlier CUDA calls see the devices it selects. Where CUDA was initialised by a call of a
    function of the same module (`device = get_device(args)`) or by an import (`from common import
    DEVICE`), the write moves above that statement. A write in a function whose variable was locked
    at module level moves to module level when it reads only names bound there (a literal write).
    A write locked in another block (around it, or in its caller) has no automatic fix.

    ## References
    - [CUDA environment variables](https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html)
    - [`torch.cuda.is_available`](https://docs.pytorch.org/docs/stable/generated/torch.cuda.is_available.html) (`PYTORCH_NVML_BASED_CUDA_CHECK`)
    - The lock-in table, [`gpumem_lint/knowledge/lockin.toml`](../gpumem_lint/knowledge/lockin.toml), and its measurement, [`bench/gpu/lockin_probe.json`](../bench/gpu/lockin_probe.json)
    """

    code = "GML301"
    name = "cuda-env-set-after-cuda-init"
    severity = Severity.ERROR
    summary = "CUDA device variable set after the CUDA driver was initialised"
    fix_title = "Set it before the first CUDA call or in the launcher; pick a device with `torch.cuda.set_device(i)`"
    fix_applicability = Applicability.UNSAFE
    triggers = ENV_TRIGGERS
    file_trigger = ENV_WRITE
    VALID = (
        # `import xformers` runs nothing on CUDA; only `xformers.ops` asks for the device at import
        """
import os

import torch
import xformers

os.environ["CUDA_VISIBLE_DEVICES"] = "0"
print(torch.cuda.device_count(), xformers.__version__)
""",
        # `len(device_ids) > 1` and `len(device_ids) == 1` of one unchanged list never both hold
        """
import os

import torch


def model_device(n_gpu, model):
    device_ids = list(range(n_gpu))
    if len(device_ids) > 1:
        model = torch.nn.DataParallel(model, device_ids=device_ids)
    if len(device_ids) == 1:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device_ids[0])
    return model.to("cuda")
""",
        # `notebook_mode == False` and `notebook_mode` test one unchanged parameter: one setup runs per call
        """
import argparse
import os

import torch


def gpu_setup(use_gpu, gpu_id):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu_id)
    return torch.device("cuda" if use_gpu and torch.cuda.is_available() else "cpu")


def main(notebook_mode=False, config=None):
    if notebook_mode == False:
        args = argparse.ArgumentParser().parse_args()
        device = gpu_setup(True, args.gpu_id)
    if notebook_mode:
        device = gpu_setup(config["gpu"]["use"], config["gpu"]["id"])
    return torch.zeros(4, device=device)


if __name__ == "__main__":
    main()
""",
        # `main()` called once, unguarded, at import: the setup writes the mask before its own CUDA call
        """
import os

import torch


def gpu_setup(gpu_id):
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu_id)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main():
    device = gpu_setup(0)
    print(device)


main()
""",
        """
import os
import torch

os.environ["CUDA_VISIBLE_DEVICES"] = "0"
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
""",
        """
import os
import torch

n = torch.cuda.device_count()  # NVML: the driver is not initialised
os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(n // 2))
""",
        """
import os
import subprocess
import torch

if torch.cuda.is_available():
    for rank in range(4):
        os.environ["CUDA_VISIBLE_DEVICES"] = str(rank)
        subprocess.Popen(["python", "worker.py"])  # the child reads its own environment
""",
        """
import os
import torch

print(os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.is_available())
""",
        """
import os
import torch

os.environ["CUDA_VISIBLE_DEVICES"] = "1"
count = torch._C._cuda_getDeviceCount()  # noqa: GML405
""",
        # on ROCm, the mask HIP applied is renamed for child processes: HIP reads both names as one
        """
import os
import torch

available = torch.cuda.is_available()

def share_visible_devices():
    if "HIP_VISIBLE_DEVICES" in os.environ and "CUDA_VISIBLE_DEVICES" not in os.environ:
        os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.pop("HIP_VISIBLE_DEVICES")

share_visible_devices()
""",
        # the same rename through local names: every value `mask` holds is read from one of the masks
        """
import os
import torch

available = torch.cuda.is_available()

def share_visible_devices():
    mask = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not mask and os.environ.get("ROCR_VISIBLE_DEVICES"):
        rocr = os.environ.pop("ROCR_VISIBLE_DEVICES")
        mask = rocr
        os.environ["CUDA_VISIBLE_DEVICES"] = mask

share_visible_devices()
""",
        # a disabled autocast asks nothing of CUDA: the decorator runs at import, before the write
        """
import os

import torch


@torch.autocast(device_type="cuda", enabled=False)
def reference_energy(x):
    return (x.double() ** 2).sum()


def main(gpu):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    return reference_energy(torch.ones(3, device="cuda"))
""",
        # a `def` inside a function takes its defaults when that function runs: after the write
        """
import os

import torch


def make_runner():
    def run(x, device="cuda" if torch.cuda.is_available() else "cpu"):
        return x.to(device)

    return run


os.environ["CUDA_VISIBLE_DEVICES"] = "0"
runner = make_runner()
""",
    )
    INVALID = (
        # a method's default is evaluated as its class body runs, at import: the query initialises the driver
        Invalid(
            """
import os

import torch


class Augmenter:
    def __init__(self, transform, device="cuda" if torch.cuda.is_available() else "cpu"):
        self.transform = transform
        self.device = device


def set_visible_devices(*ids):
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, ids))


set_visible_devices(0)
""",
            (14,),
        ),
        # catalyst asks `torch.cuda.is_available()` as it is imported (its settings module)
        Invalid(
            """
import os

import torch
from catalyst.data.sampler import DistributedSamplerWrapper


def main(sampler):
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    return torch.cuda.device_count(), DistributedSamplerWrapper(sampler)
""",
            (9,),
            fixed="""
import os

import torch
os.environ["CUDA_VISIBLE_DEVICES"] = "0"
from catalyst.data.sampler import DistributedSamplerWrapper


def main(sampler):
    return torch.cuda.device_count(), DistributedSamplerWrapper(sampler)
""",
        ),
        # both tests hold for one GPU: DataParallel has allocated before the write
        Invalid(
            """
import os

import torch


def model_device(n_gpu, model):
    device_ids = list(range(n_gpu))
    if len(device_ids) > 1:
        model = torch.nn.DataParallel(model, device_ids=device_ids)
    if len(device_ids) >= 1:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device_ids[0])
    return model.to("cuda")
""",
            (12,),
            fixed="""
import os

import torch


def model_device(n_gpu, model):
    device_ids = list(range(n_gpu))
    if len(device_ids) >= 1:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device_ids[0])
    if len(device_ids) > 1:
        model = torch.nn.DataParallel(model, device_ids=device_ids)
    return model.to("cuda")
""",
        ),
        # `is_available()` runs only when `device == ""`: the `cpu` arm may follow it, the `elif device:` arm never
        Invalid(
            """
import os

import torch


def select_device(device=""):
    cpu = device == "cpu" or device == "" and not torch.cuda.is_available()
    if cpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
    elif device:
        os.environ["CUDA_VISIBLE_DEVICES"] = device
    return torch.device("cpu" if cpu else "cuda:0")
""",
            (10,),
        ),
        # enabled by a flag: the scaler asks `torch.cuda.is_available()`, which runs cuInit
        Invalid(
            """
import os

import torch


def main(gpu, use_amp):
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    return scaler, torch.ones(3, device="cuda")
""",
            (9,),
            fixed="""
import os

import torch


def main(gpu, use_amp):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    return scaler, torch.ones(3, device="cuda")
""",
        ),
        # two tests of different values: both setups may run, the second after the first's CUDA call
        Invalid(
            """
import argparse
import os

import torch


def gpu_setup(use_gpu, gpu_id):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu_id)
    return torch.device("cuda" if use_gpu and torch.cuda.is_available() else "cpu")


def main(notebook_mode=False, config=None):
    if notebook_mode == False:
        args = argparse.ArgumentParser().parse_args()
        device = gpu_setup(True, args.gpu_id)
    if config is not None:
        device = gpu_setup(config["gpu"]["use"], config["gpu"]["id"])
    return torch.zeros(4, device=device)


if __name__ == "__main__":
    main()
""",
            (9,),
        ),
        # the module touched CUDA before it called `main()`
        Invalid(
            """
import os
import torch


def gpu_setup(gpu_id):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu_id)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main():
    return gpu_setup(0)


torch.cuda.is_available()
main()
""",
            (7,),
        ),
        Invalid(
            """
import os
import torch

def main(args):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus
    model = Net().to(device)
""",
            (8,),
            fixed="""
import os
import torch

def main(args):
    if args.gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Net().to(device)
""",
        ),
        Invalid(
            """
import os
import torch

def main(args):
    gpus = args.gpus if torch.cuda.is_available() else ""
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus
""",
            (7,),
        ),
        Invalid(
            """
import os
import torch

print(torch.cuda.is_available())
os.environ["CUDA_VISIBLE_DEVICES"] = ""
print(torch.cuda.device_count())
""",
            (6,),
            fixed="""
import os
import torch

os.environ["CUDA_VISIBLE_DEVICES"] = ""
print(torch.cuda.is_available())
print(torch.cuda.device_count())
""",
            prints="False\n0",
            cuda=1,
        ),
        Invalid(
            """
import os
import torch

def main(args):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus
    model = Net().to(device)
""",
            (7,),
            fixed="""
import os
import torch

def main(args):
    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpus
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Net().to(device)
""",
        ),
        Invalid(
            """
import os
import torch

def setup(rank):
    torch.cuda.set_device(rank)

def main(rank):
    setup(rank)
    os.environ["CUDA_LAUNCH_BLOCKING"] = "1"
""",
            (10,),
            fixed="""
import os
import torch

def setup(rank):
    torch.cuda.set_device(rank)

def main(rank):
    os.environ["CUDA_LAUNCH_BLOCKING"] = "1"
    setup(rank)
""",
        ),
        Invalid(
            """
import os
import torch

def pick_device():
    return "cuda" if torch.cuda.is_available() else "cpu"

DEVICE = pick_device()

def main():
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    train(DEVICE)
""",
            (11,),
            fixed="""
import os
import torch

def pick_device():
    return "cuda" if torch.cuda.is_available() else "cpu"

os.environ["CUDA_VISIBLE_DEVICES"] = "1"
DEVICE = pick_device()

def main():
    train(DEVICE)
""",
        ),
        Invalid(
            """
import os
import torch

if torch._C._cuda_getDeviceCount() > 1:  # noqa: GML405
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
""",
            (6,),
        ),
    )

    def check(self, ctx: FileContext) -> Iterator[Report]:
        return late_env_writes(ctx, self.code)
