"""A progress bar on stderr for long runs on a terminal; nothing anywhere else.

Silent under `-q`, when stderr is not a terminal, in CI (`CI` is set) and in pre-commit
(`PRE_COMMIT` is set), where a redrawn line would only clutter a log.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator

#: Fewer files than this finish before a bar would be worth drawing.
LONG_RUN_FILES = 200


def wanted(file_count: int, quiet: bool) -> bool:
    if quiet or file_count < LONG_RUN_FILES or os.environ.get("CI") or os.environ.get("PRE_COMMIT"):
        return False
    return sys.stderr.isatty()


@contextlib.contextmanager
def progress_bar(file_count: int, enabled: bool) -> Iterator[Callable[[], None] | None]:
    """Yields the callback to call once per finished file, or None when no bar is shown."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (TextColumn("Linting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("lint", total=file_count)
        yield lambda: progress.advance(task)
