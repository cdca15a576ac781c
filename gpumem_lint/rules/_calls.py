"""Calls of given qualified names (`torch.cuda.set_device`), resolved through the file's imports."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from gpumem_lint.context import FileContext
from gpumem_lint.semantic.walk import Walker


def qualified_calls(ctx: FileContext, wanted: Callable[[str], bool]) -> Iterator[tuple[cst.Call, str]]:
    """Every call whose qualified name satisfies `wanted`, in source order."""
    collector = _Calls(ctx, wanted)
    collector.walk(ctx.module)
    return iter(collector.found)


def argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if len(positional) > position:
        return positional[position].value
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None


class _Calls(Walker):
    def __init__(self, ctx: FileContext, wanted: Callable[[str], bool]) -> None:
        self.imports = ctx.program_order.imports
        self.wanted = wanted
        self.found: list[tuple[cst.Call, str]] = []

    def visit_Call(self, node: cst.Call) -> None:
        name = self.imports.qualify(node.func)
        if name is not None and self.wanted(name):
            self.found.append((node, name))
