"""libcst's parse, without the work a parse need not do.

Every node libcst builds validates itself in `__post_init__` (whitespace matches its pattern,
parentheses pair up, ...). That protects trees built by hand; a tree the parser built from source
is valid by construction, and libcst's own comment on `CSTNode.__post_init__` says validation
could be skipped when parsing. Skipping it saves 10-12 % of a parse (bench/README.md). Nodes built
outside `parse_module` (the fixes) are validated as always.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import libcst as cst
from libcst._nodes.base import CSTNode

from gpumem_lint import collector

_VALIDATE = CSTNode.__dict__.get("__post_init__")


def parse_module(text: str) -> cst.Module:
    with collector.paused(), _unvalidated():
        return cst.parse_module(text)


@contextmanager
def _unvalidated() -> Iterator[None]:
    if _VALIDATE is None:  # a libcst that validates elsewhere: leave it be
        yield
        return
    CSTNode.__post_init__ = _trust  # type: ignore[method-assign]
    try:
        yield
    finally:
        CSTNode.__post_init__ = _VALIDATE  # type: ignore[method-assign]


def _trust(node: CSTNode) -> None:
    """What `__post_init__` does while the parser builds a tree: nothing."""
