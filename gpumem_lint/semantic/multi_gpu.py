"""Whether a module uses several GPUs from one process, from the syntax that does it:

- `torch.nn.DataParallel(model)` (all visible GPUs), unless `device_ids` is a literal list of one;
- a `device_map` that spreads a model over the GPUs: `"auto"`, `"balanced"`, `"balanced_low_0"`,
  `"sequential"` (Hugging Face `from_pretrained`, accelerate's dispatch);
- a loop (`for`, or a comprehension) whose variable picks the device: `f"cuda:{i}"`,
  `torch.device("cuda", i)`, `.cuda(i)`.

API: `multi_gpu_use(module, imports)` -> the first such expression in source order, or None.
"""

from __future__ import annotations

import libcst as cst

from gpumem_lint.semantic.imports import ImportTable, dotted_name
from gpumem_lint.semantic.literals import keyword
from gpumem_lint.semantic.walk import Walker

_DATA_PARALLEL = frozenset({"torch.nn.DataParallel", "torch.nn.parallel.DataParallel"})
_SPREADING_MAPS = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})


def multi_gpu_use(module: cst.Module, imports: ImportTable) -> cst.CSTNode | None:
    finder = _Finder(imports)
    finder.walk(module)
    return finder.found


class _Finder(Walker):
    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports
        self.found: cst.CSTNode | None = None
        self.loop_names: list[set[str]] = []

    def visit_For(self, node: cst.For) -> None:
        self.loop_names.append(_names(node.target))

    def leave_For(self, node: cst.For) -> None:
        self.loop_names.pop()

    def _comprehension(self, node) -> None:
        names: set[str] = set()
        clause = node.for_in
        while clause is not None:
            names |= _names(clause.target)
            clause = clause.inner_for_in
        self.loop_names.append(names)

    def _leave_comprehension(self, node) -> None:
        self.loop_names.pop()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension
    leave_ListComp = leave_SetComp = leave_GeneratorExp = leave_DictComp = _leave_comprehension

    def visit_Call(self, node: cst.Call) -> None:
        if self.found is None and (self._data_parallel(node) or self._spreading_map(node) or self._per_device(node)):
            self.found = node

    def _data_parallel(self, node: cst.Call) -> bool:
        if self.imports.qualify(node.func) not in _DATA_PARALLEL:
            return False
        positional = [arg.value for arg in node.args if arg.keyword is None]
        ids = keyword(node, "device_ids") or (positional[1] if len(positional) > 1 else None)
        return not (isinstance(ids, (cst.List, cst.Tuple)) and len(ids.elements) <= 1)

    def _spreading_map(self, node: cst.Call) -> bool:
        value = keyword(node, "device_map")
        return isinstance(value, cst.SimpleString) and value.evaluated_value in _SPREADING_MAPS

    def _per_device(self, node: cst.Call) -> bool:
        """A device chosen by a loop variable: `torch.device("cuda", i)`, `.cuda(i)`, or an f-string
        `"cuda:{i}"` passed to the call."""
        loop = set().union(*self.loop_names) if self.loop_names else set()
        if not loop:
            return False
        values = [arg.value for arg in node.args]
        if self.imports.qualify(node.func) == "torch.device" and len(values) > 1:
            return _is_cuda(values[0]) and isinstance(values[1], cst.Name) and values[1].value in loop
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda" and values:
            return isinstance(values[0], cst.Name) and values[0].value in loop
        return any(_cuda_fstring_of(value, loop) for value in values)


def _is_cuda(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value == "cuda"


def _cuda_fstring_of(node: cst.BaseExpression, loop: set[str]) -> bool:
    """`f"cuda:{i}"` with `i` a loop variable."""
    if not isinstance(node, cst.FormattedString) or not node.parts:
        return False
    head = node.parts[0]
    if not (isinstance(head, cst.FormattedStringText) and head.value.startswith("cuda:")):
        return False
    return any(
        isinstance(part, cst.FormattedStringExpression) and dotted_name(part.expression) in loop
        for part in node.parts[1:]
    )


def _names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_names(element.value) for element in target.elements))
    return set()
