"""Tracing spawn children: they start a fresh interpreter, so the tracer must install itself there too.

`multiprocessing.spawn.get_command_line` builds `python -c 'from multiprocessing.spawn import spawn_main; ...'`
for every spawn child (torch.multiprocessing.spawn and DataLoader workers with the spawn context included). The
wrapped version prefixes a session install; the child then writes its findings where the parent reads them.
"""

from __future__ import annotations

import atexit
import functools
import multiprocessing.spawn
import sys
from pathlib import Path

_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)


def trace_spawn_children(session) -> None:
    original = multiprocessing.spawn.get_command_line

    @functools.wraps(original)
    def get_command_line(**kwds):
        command = original(**kwds)
        session.environment.launched()
        if "-c" not in command:
            return command  # a frozen executable: no program text to prefix
        index = command.index("-c") + 1
        options = {"max_ops": session.max_ops, "max_seconds": session.max_seconds, "max_steps": session.max_steps}
        command[index] = (
            f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
            f"from gpumem_lint.trace.children import start_child; "
            f"start_child({str(session.records)!r}, {options!r}); del sys.path[0]; " + command[index]
        )
        return command

    multiprocessing.spawn.get_command_line = get_command_line


def start_child(records: str, options: dict) -> None:
    """Runs first in a spawn child: trace it, and leave its findings at exit (atexit runs this handler last)."""
    try:
        from gpumem_lint.trace.session import Session

        session = Session(Path(records), **options)
        session.is_child = True
        atexit.register(session.write_child_records)
        session.install()
    except Exception as error:
        print(f"gpumem-lint trace: warning: a child process runs untraced ({error!r})", file=sys.stderr)
