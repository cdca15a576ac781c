"""Whether `torch.set_default_tensor_type("torch.cuda.FloatTensor")` makes factories allocate on CUDA
(an integer `torch.tensor` too), and what a forked and a spawned child inherit of it, on a CUDA machine.

    python bench/gpu/default_device_probe.py > bench/gpu/default_device_probe.json

docs/facts.md F40 quotes the output (H200, torch 2.11.0+cu130, 2026-12-01); devices.toml
[default_device] `type_setters` rests on it. The recorded JSON came from a more compact copy of this
script (the same calls); its torch and device fields are those of the same machine image
(bench/gpu/process_probe.json). The CPU half of F40 (set_default_device) is
re-measured with the meta device by tests/test_default_device_facts.py.
"""

import json
import multiprocessing as mp

import torch


def child(answers):
    try:
        answers.put(("ok", str(torch.tensor([1, 2]).device)))
    except Exception as error:
        answers.put((type(error).__name__, str(error)[:160]))


if __name__ == "__main__":
    torch.cuda.set_device(0)
    torch.set_default_tensor_type("torch.cuda.FloatTensor")
    report = {
        "torch": torch.__version__,
        "parent_int_tensor": str(torch.tensor([1, 2]).device),
        "parent_zeros": str(torch.zeros(1).device),
    }
    for method in ("fork", "spawn"):
        context = mp.get_context(method)
        answers = context.Queue()
        process = context.Process(target=child, args=(answers,))
        process.start()
        report[method] = answers.get(timeout=60)
        process.join()
    print(json.dumps(report))
