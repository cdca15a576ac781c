"""What autograd saves for backward (`saved_for_backward.json`, measured by scripts/generate_saved_tensors.py).

An in-place write to a saved tensor makes the later `backward()` raise "one of the variables needed
for gradient computation has been modified by an inplace operation". Ops are named as called:
`torch.sigmoid`, `torch.Tensor.mul_`, `torch.nn.functional.relu`, operators as `*` and `*=`; a suffix
names a call that saves differently: `.Scalar` (a number where a tensor may go: `x * 2`), `.dim`
(`torch.max(x, 1)`), `.inplace` (`F.relu(x, inplace=True)`). Modules are named by class (`Linear`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from gpumem_lint.knowledge import data_text

OUTPUT, INTERNAL = "output", "internal"


@dataclass(frozen=True, eq=False)
class SavedTensors:
    """What one call form keeps. `saved` maps each kept item (an argument's name, `output`, `output1`, ...
    or `internal`) to the differentiable arguments whose gradient needs it."""

    grad_fn: str
    arguments: tuple[str, ...]  # positional order at the call site; a method's receiver `self` is not one
    differentiable: tuple[str, ...]
    saved: Mapping[str, frozenset[str]]

    def items(self, requires_grad: Collection[str] | None = None) -> frozenset[str]:
        """What is kept when the arguments named in `requires_grad` require grad (None: all that can)."""
        if requires_grad is None:
            return frozenset(self.saved)
        wanted = frozenset(requires_grad)
        return frozenset(item for item, needed_by in self.saved.items() if needed_by & wanted)

    def arguments_kept(self, requires_grad: Collection[str] | None = None) -> frozenset[int | str]:
        """The kept arguments, each by name and, when it can be passed positionally, by position."""
        names = {item for item in self.items(requires_grad) if not _is_output(item) and item != INTERNAL}
        return frozenset(names | {self.arguments.index(name) for name in names if name in self.arguments})

    def outputs_kept(self, requires_grad: Collection[str] | None = None) -> frozenset[int]:
        return frozenset(int(item.removeprefix(OUTPUT) or 0) for item in self.items(requires_grad) if _is_output(item))


def _is_output(item: str) -> bool:
    index = item.removeprefix(OUTPUT)
    return item.startswith(OUTPUT) and (index == "" or index.isdigit())


@dataclass(frozen=True, eq=False)
class SavedForBackward:
    """Lookups by op or module name; a name the table does not hold keeps nothing."""

    torch_version: str
    ops: Mapping[str, SavedTensors]
    modules: Mapping[str, SavedTensors]

    def saves_result(self, op_name: str, requires_grad: Collection[str] | None = None) -> bool:
        """Whether the op keeps its (first) output: `x = torch.sigmoid(w); x.mul_(2)` breaks backward."""
        return 0 in self.saved_outputs(op_name, requires_grad)

    def saved_outputs(self, op_name: str, requires_grad: Collection[str] | None = None) -> frozenset[int]:
        """Indices of the kept outputs: `torch.max(x, 1)` keeps its indices, output 1."""
        op = self.ops.get(op_name)
        return op.outputs_kept(requires_grad) if op else frozenset()

    def saved_arguments(self, op_name: str, requires_grad: Collection[str] | None = None) -> frozenset[int | str]:
        """The kept arguments by name and call-site position: `torch.mul(a, b)` keeps {0, 'input', 1, 'other'};
        `a.mul(b)` and `a * b` keep {'self', 0, 'other'} (the receiver is `self`, not a position)."""
        op = self.ops.get(op_name)
        return op.arguments_kept(requires_grad) if op else frozenset()

    def module_saves(self, class_name: str, requires_grad: Collection[str] | None = None) -> frozenset[str]:
        """What a module call keeps, by name: its inputs (`input`, `input1`), parameters and buffers
        (`weight`, `running_mean`) and `output`. Measured in training mode."""
        module = self.modules.get(class_name)
        return frozenset(module.items(requires_grad) - {INTERNAL}) if module else frozenset()


def _saved_tensors(row: dict, arguments_key: str) -> SavedTensors:
    return SavedTensors(
        grad_fn=row["grad_fn"],
        arguments=tuple(row[arguments_key]),
        differentiable=tuple(row["differentiable"]),
        saved=MappingProxyType({item: frozenset(needed_by) for item, needed_by in row["saved"].items()}),
    )


@cache
def saved_for_backward() -> SavedForBackward:
    table = json.loads(data_text("saved_for_backward.json"))
    return SavedForBackward(
        torch_version=table["torch_version"],
        ops=MappingProxyType({name: _saved_tensors(row, "arguments") for name, row in table["ops"].items()}),
        modules=MappingProxyType({name: _saved_tensors(row, "inputs") for name, row in table["modules"].items()}),
    )
