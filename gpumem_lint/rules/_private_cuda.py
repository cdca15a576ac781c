"""Calls into torch's private CUDA bindings: `torch._C._cuda_<name>(...)`, however `_C` was reached."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.rules._calls import qualified_calls

#: Modules through which the binding module `torch._C` is reachable as `._C`.
_C_OWNERS = ("torch._C.", "torch.cuda._C.", "torch.cuda.memory._C.")
#: Every way to such a name spells `_C` (`torch._C._cuda_x`, `from torch._C import _cuda_x`,
#: `from torch import _C`); `_cuda_` alone is in many names that are not bindings (`_cuda_available`).
BINDING_MODULE = re.compile(r"\b_C\b")


def private_cuda_calls(ctx: FileContext) -> Iterator[tuple[cst.Call, str, str]]:
    """(call, the name as written qualified, the `_cuda_*` binding name); none in torch's own sources,
    which implement the public functions with these bindings."""
    calls = list(qualified_calls(ctx, _is_private_cuda))
    if calls and _inside_torch(Path(ctx.path)):
        return
    for call, name in calls:
        yield call, name, name.rsplit(".", 1)[1]


def _inside_torch(path: Path) -> bool:
    """Whether the file belongs to the torch package: an ancestor `torch/` holding `_C`."""
    return any(parent.name == "torch" and (parent / "_C").is_dir() for parent in path.resolve().parents)


def _is_private_cuda(name: str) -> bool:
    owner, _, binding = name.rpartition(".")
    return binding.startswith("_cuda_") and f"{owner}." in _C_OWNERS
