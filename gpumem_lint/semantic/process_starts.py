"""Where a process made by one call is started: `p = Process(...)` and, later, `p.start()` in the same
function, or `self.worker = Process(...)` in one method and `self.worker.start()` in another
method of the same class. A `Process` forks at `start()`, not where it is made, so what ran
before the fork is what ran before the `start()`.

API: `starts(module).of(call)` -> the `.start()` calls of the object `call` made (empty when it is
not assigned to a name or a `self.` attribute, or never started by name).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.walk import Walker


@dataclass
class Starts:
    #: id(call) -> (the name it is assigned to, the scope that name lives in)
    made: dict[int, tuple[str, int]] = field(default_factory=dict)
    #: (name, scope) -> the `.start()` calls on it
    started: dict[tuple[str, int], list[cst.Call]] = field(default_factory=dict)

    def of(self, call: cst.Call) -> list[cst.Call]:
        place = self.made.get(id(call))
        return self.started.get(place, []) if place is not None else []


def starts(module: cst.Module) -> Starts:
    collector = _Collector()
    collector.walk(module)
    return collector.found


class _Collector(Walker):
    """`self.` attributes live in their class; other names in their function (or the module)."""

    def __init__(self) -> None:
        self.found = Starts()
        self.classes: list[int] = [0]
        self.functions: list[int] = [0]

    def _scope(self, name: str) -> int:
        return self.classes[-1] if name.startswith("self.") else self.functions[-1]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(id(node))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(id(node))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call):
            for target in node.targets:
                name = dotted_name(target.target)
                if name is not None:
                    self.found.made[id(node.value)] = (name, self._scope(name))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "start" and not node.args:
            name = dotted_name(func.value)
            if name is not None:
                self.found.started.setdefault((name, self._scope(name)), []).append(node)
