"""A write of a device mask with the value read from another name of the same mask (`same_mask` in the
lock-in table) renames the mask in effect: followed through local names, and only when every value the
name can hold is such a read."""

from __future__ import annotations

import textwrap

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules.gml301_cuda_env_set_after_cuda_init import CudaEnvSetAfterCudaInit

HEAD = """
import os
import torch

available = torch.cuda.is_available()

def setup(arg=None):
"""


def _codes(body: str) -> list[str]:
    source = HEAD + textwrap.indent(textwrap.dedent(body), "    ")
    return [d.code for d in lint_source(source, "example.py", [CudaEnvSetAfterCudaInit])]


@pytest.mark.parametrize(
    "body",
    [
        'val = os.environ.pop("HIP_VISIBLE_DEVICES")\nos.environ["CUDA_VISIBLE_DEVICES"] = val\n',
        'val: str = os.environ["HIP_VISIBLE_DEVICES"]\nos.environ["CUDA_VISIBLE_DEVICES"] = val\n',
        # every binding reads a mask, through another name too
        'a = os.getenv("CUDA_VISIBLE_DEVICES")\nb = os.environ.pop("HIP_VISIBLE_DEVICES")\n'
        'if not a:\n    a = b\nos.environ["CUDA_VISIBLE_DEVICES"] = a\n',
        'os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.pop("ROCR_VISIBLE_DEVICES", None)\n',
    ],
)
def test_a_mask_renamed_through_local_names_is_silent(body: str):
    assert _codes(body) == []


@pytest.mark.parametrize(
    "body",
    [
        # one binding is a literal: the value may be a new mask
        'val = os.environ.pop("HIP_VISIBLE_DEVICES")\nif not val:\n    val = "0"\n'
        'os.environ["CUDA_VISIBLE_DEVICES"] = val\n',
        # a default is a value of its own (the variable was unset)
        'val = os.environ.get("HIP_VISIBLE_DEVICES", "0")\nos.environ["CUDA_VISIBLE_DEVICES"] = val\n',
        'os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.get("HIP_VISIBLE_DEVICES", "0")\n',
        # a parameter, a loop target, an unpacking, a name the function does not bind
        'os.environ["CUDA_VISIBLE_DEVICES"] = arg\n',
        'for val in ("0", "1"):\n    os.environ["CUDA_VISIBLE_DEVICES"] = val\n',
        'val, other = os.environ.pop("HIP_VISIBLE_DEVICES"), 1\nos.environ["CUDA_VISIBLE_DEVICES"] = val\n',
        'os.environ["CUDA_VISIBLE_DEVICES"] = available\n',
        # another variable than a mask
        'val = os.environ.pop("LOCAL_RANK")\nos.environ["CUDA_VISIBLE_DEVICES"] = val\n',
        'val = os.environ.pop("CUDA_DEVICE_ORDER")\nos.environ["CUDA_VISIBLE_DEVICES"] = val\n',
    ],
)
def test_any_other_value_is_still_reported(body: str):
    assert _codes(body) == ["GML301"]
