"""Run a function on a thread whose stack is deep enough for any valid Python tree.

Valid programs nest deeper than the default recursion limit lets a recursive walk go
(`a + a + ... + a` with a thousand terms, long method chains). Such files are rare, so
they are retried here instead of making every walk iterative.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_THREAD_NAME = "gpumem-lint-deep-stack"
_STACK_BYTES = 512 * 1024 * 1024  # address space only: pages are committed as they are used
_RECURSION_LIMIT = 200_000


def on_deep_stack() -> bool:
    """True while running inside `call_on_deep_stack`: a RecursionError here is final."""
    return threading.current_thread().name == _THREAD_NAME


def call_on_deep_stack(function: Callable[..., T], *args: object) -> T:
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, function(*args)))
        except BaseException as error:
            outcome.append((False, error))

    previous_stack = threading.stack_size(_STACK_BYTES)
    previous_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        thread = threading.Thread(target=target, name=_THREAD_NAME)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous_stack)
        sys.setrecursionlimit(previous_limit)
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return value
