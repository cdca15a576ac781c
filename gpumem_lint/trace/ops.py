"""Per-operator facts read once from its schema (torch): what it writes, whether it returns views.

Uses torch. `op_info(func)` is cached per OpOverload, so the dispatch hook pays one dictionary lookup.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import torch

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_TABLE = tomllib.loads((Path(__file__).with_name("op_effects.toml")).read_text(encoding="utf-8"))
_UNDECLARED_WRITES: dict[str, list[str]] = _TABLE["undeclared_writes"]
_OVERWRITES = frozenset(_TABLE["overwrites"]["ops"])

OTHER, VIEW, WRITE = 0, 1, 2
_POINTWISE = getattr(getattr(torch, "Tag", None), "pointwise", None)


@dataclass(frozen=True)
class OpInfo:
    name: str  # "aten::add_"
    kind: int  # OTHER, VIEW or WRITE
    #: Positions and keyword names of the written arguments (a Tensor or a list of Tensors).
    written_positions: tuple[int, ...] = ()
    written_names: tuple[str, ...] = ()
    #: Writes all of its output without reading it (copy_, fill_): ends a pending read-after-write.
    overwrites: bool = False
    #: Undeclared writes happen only when this boolean argument is true (batch norm's `training`).
    only_when: tuple[int, str] | None = None
    #: Each output element is computed from the same element of its inputs (torch.Tag.pointwise, and copy_): an
    #: input laid out exactly as the written tensor is read before it is overwritten.
    elementwise: bool = False
    #: (position, name) of the tensor arguments it does not write: what it reads.
    read_arguments: tuple[tuple[int, str], ...] = ()


#: Keyed by id(): OpOverload.__hash__ is Python code, and overloads live as long as torch (never reused ids).
_CACHE: dict[int, OpInfo] = {}
_KEPT: list = []  # the analysed overloads themselves, so that no id in _CACHE can be reused


def op_info(func) -> OpInfo:
    info = _CACHE.get(id(func))
    if info is None:
        info = _CACHE[id(func)] = _analyse(func)
        _KEPT.append(func)
    return info


def _analyse(func) -> OpInfo:
    schema = func._schema
    name = schema.name
    arguments = list(schema.arguments)
    written = [
        (index, argument.name)
        for index, argument in enumerate(arguments)
        if argument.alias_info is not None and argument.alias_info.is_write
    ]
    only_when = None
    if not written and name in _UNDECLARED_WRITES:
        names = _UNDECLARED_WRITES[name]
        written = [(index, argument.name) for index, argument in enumerate(arguments) if argument.name in names]
        training = next((i for i, a in enumerate(arguments) if a.name == "training"), None)
        if training is not None:
            only_when = (training, "training")
    if written:
        tags = getattr(func, "tags", ())
        return OpInfo(
            name=name,
            kind=WRITE,
            written_positions=tuple(index for index, _ in written if not arguments[index].kwarg_only),
            written_names=tuple(arg_name for _, arg_name in written),
            overwrites=name in _OVERWRITES,
            only_when=only_when,
            elementwise=name == "aten::copy_" or _POINTWISE in tags,
            read_arguments=tuple(
                (index, argument.name)
                for index, argument in enumerate(arguments)
                if "Tensor" in str(argument.type) and all(index != position for position, _ in written)
            ),
        )
    returns_view = any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)
    return OpInfo(name=name, kind=VIEW if returns_view else OTHER)
