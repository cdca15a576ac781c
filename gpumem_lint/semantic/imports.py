"""A light import resolver: which dotted name does a local name stand for?

`import torch as th`, `from torch import nn`, `import torch.multiprocessing as mp` and
`from os import environ` are all we need; a full scope analysis costs about 9x a parse
on real code (measured on torch/nn and torch/utils, 2 cores), this costs one pass
over the import statements.
"""

from __future__ import annotations

import libcst as cst


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a pure Name/Attribute chain, else None."""
    parts: list[str] = []
    while type(node) is cst.Attribute:  # exact types: isinstance against libcst's classes is slow
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def place_prefixes(place: str) -> list[str]:
    """`self.buf.weight` -> `self`, `self.buf`, `self.buf.weight`: reading one reads them all."""
    parts = place.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


class ImportTable:
    """Local name -> qualified name, for every import anywhere in the module."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted_name(alias.name)
                if full is None:
                    continue
                if alias.asname is not None:
                    self._names[alias.asname.name.value] = full  # type: ignore[union-attr]
                else:
                    head = full.split(".", 1)[0]
                    self._names[head] = head
            return
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module)
        if module is None:
            return
        for alias in node.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else None
            if name is None:
                continue
            local = alias.asname.name.value if alias.asname is not None else name  # type: ignore[union-attr]
            self._names[local] = f"{module}.{name}"

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """The qualified name of an expression like `th.nn.functional.relu`, if imported."""
        name = dotted_name(node)
        return None if name is None else self.qualify_name(name)

    def qualify_name(self, name: str) -> str | None:
        """The qualified name of a dotted name like `th.nn.functional.relu`, if imported."""
        head, _, rest = name.partition(".")
        target = self._names.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def local_name(self, module: str) -> str | None:
        """The name `module` itself is bound to here (`import torch as th` -> `th`), if any."""
        return next((local for local, target in self._names.items() if target == module), None)

    def imports(self, module: str) -> bool:
        return any(value == module or value.startswith(module + ".") for value in self._names.values())
