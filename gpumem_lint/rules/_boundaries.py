"""What the process-boundary rules (GML2xx) share: the module's process model, and words
for crossings and start methods."""

from __future__ import annotations

from gpumem_lint.context import FileContext
from gpumem_lint.semantic.boundaries import ProcessModel, StartMethod
from gpumem_lint.semantic.processes import Crossing


def process_model(ctx: FileContext) -> ProcessModel:
    return ProcessModel(ctx.semantic.facts, ctx.semantic.imports, getattr(ctx, "target_version", None))


def crossing_text(ctx: FileContext, crossing: Crossing) -> str:
    code = ctx.code(crossing.node)
    return f"`{code if len(code) <= 50 else code[:49] + '…'}` (line {ctx.line(crossing.node)})"


def start_method_text(method: StartMethod) -> str:
    if method.name is None:
        return "a start method chosen at run time"
    if method.default:
        return f"the default start method ({method.name} on Linux for the targeted Python)"
    return f"the {method.name} start method"
