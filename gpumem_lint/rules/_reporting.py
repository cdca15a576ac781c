"""What the alias rules share: words for aliases and writes, and which read to report."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from gpumem_lint.context import FileContext
from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.values import AliasKind, Handle, Read, Write

_PHRASES = {
    AliasKind.VIEW: "a view",
    AliasKind.DETACH: "a `.detach()` alias",
    AliasKind.DATA: "a `.data` alias",
    AliasKind.NUMPY: "a numpy bridge (shared memory)",
    AliasKind.STATE_DICT: "a `state_dict()` alias",
    AliasKind.EXPAND: "an expanded view",
    AliasKind.MULTI_VIEW: "one of several views",
    AliasKind.WRAPPER: "an `nn.Parameter` wrapper",
}


def alias_phrase(handle: Handle) -> str:
    return _PHRASES.get(handle.kind, "an alias")


def write_text(ctx: FileContext, write: Write) -> str:
    code = f"`{_shorten(ctx.code(write.node))}`"
    if write.op == "max_norm":  # a call that shows no write: say which one it makes (F57)
        return f"{code}, whose `max_norm` rescales the weight in place,"
    return code


def first_read(ctx: FileContext, reads: list[Read]) -> Read:
    """The earliest read; of one read seen by several writes, the one after the earliest write
    (the order of `reads` follows sets of handles, which differs from run to run)."""
    return min(reads, key=lambda read: (_where(ctx, read.node), _where(ctx, read.write.node)))


def _where(ctx: FileContext, node) -> tuple[int, int]:
    start = ctx.positions[node].start
    return start.line, start.column


def first_reads(
    ctx: FileContext,
    facts: ScopeFacts,
    matches: Callable[[Read, ScopeFacts], bool],
    group: Callable[[Read], Hashable],
) -> list[Read]:
    """The earliest matching read of each group (per write, or per alias): one finding each."""
    groups: dict[Hashable, list[Read]] = {}
    for read in facts.reads:
        if matches(read, facts):
            groups.setdefault(group(read), []).append(read)
    return [first_read(ctx, reads) for reads in groups.values()]


def _shorten(code: str, limit: int = 60) -> str:
    return code if len(code) <= limit else code[: limit - 1] + "…"
