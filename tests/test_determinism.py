"""The same file gives the same findings in every run (semantic/values.py `fresh_serials`).

The alias analysis iterates sets of handles; hashed by address, their order, and with it which of two
tied findings is reported, changed from one process to the next. Each run here is a fresh interpreter,
with another hash seed and another memory layout.
"""

from __future__ import annotations

import subprocess
import sys

SOURCE = """
import numpy as np
import torch


def load(transform, image, depth):
    sample = transform({"image": image, "depth": depth})
    sample["image"] = torch.from_numpy(sample["image"])
    sample["depth"] = torch.from_numpy(sample["depth"])
    sample["valid_mask"] = torch.isnan(sample["depth"]) == 0
    sample["depth"][sample["valid_mask"] == 0] = 0
    sample["path"] = "x"
    return sample
"""


def test_findings_are_the_same_in_every_process(tmp_path):
    path = tmp_path / "sample.py"
    path.write_text(SOURCE)
    outputs = set()
    for seed in range(16):  # before the serials, about one run in three differed
        done = subprocess.run(
            [sys.executable, "-m", "gpumem_lint", str(path), "--no-cache", "-q", "--output-format", "concise"],
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": str(seed), "PATH": ""},
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr
        outputs.add(done.stdout)
    assert len(outputs) == 1, outputs
