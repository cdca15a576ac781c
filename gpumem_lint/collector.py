"""CPython's cyclic garbage collector, set for linting.

A syntax tree, and each analysis of it, is hundreds of thousands of objects without a
reference cycle among them: reference counting frees them all. The cyclic collector does not
know that. By default it scans the youngest objects every 700 allocations, and now and then
the whole heap (libcst, the rules, every tree still alive): 5-11 % of a cold run
(bench/README.md). It stays on, for the cycles there may be, but less eager.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations between two scans of the youngest generation while a run lints (CPython: 700).
_LINTING_THRESHOLD = 50_000


@contextmanager
def paused() -> Iterator[None]:
    """While a syntax tree is built: a growing tree would be scanned again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def linting() -> Iterator[None]:
    """While a run lints: what is loaded so far (libcst, the rules) leaves the collector's scans
    (gc.freeze, which also spares the pages a forked worker shares with its parent), and the
    youngest generation is scanned every 50,000 allocations."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(_LINTING_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
