"""What the process-boundary rules (GML2xx) share: the module's process model, and words
for crossings and start methods."""

from __future__ import annotations

from pathlib import Path

from gpumem_lint.context import FileContext
from gpumem_lint.semantic.boundaries import ProcessModel, StartMethod
from gpumem_lint.semantic.processes import Crossing
from gpumem_lint.target import find_target


def process_model(ctx: FileContext) -> ProcessModel:
    return ProcessModel(ctx.semantic.facts, ctx.semantic.imports, target_version(ctx))


def target_version(ctx: FileContext) -> tuple[int, int] | None:
    """The Python version the file targets (target.py); its pyproject.toml becomes a
    dependency of the findings, so cached results follow a change of target."""
    source = Path(ctx.path)
    if not source.is_file():
        return None
    target = find_target(source.resolve())
    if target.config is not None:
        ctx.dependencies.add(target.config)
    return target.version


def crossing_text(ctx: FileContext, crossing: Crossing) -> str:
    code = ctx.code(crossing.node)
    return f"`{code if len(code) <= 50 else code[:49] + '…'}` (line {ctx.line(crossing.node)})"


def start_method_text(method: StartMethod) -> str:
    if method.name is None:
        return "a start method chosen at run time"
    if method.default:
        return f"the default start method ({method.name} on Linux for the targeted Python)"
    return f"the {method.name} start method"
