"""Tracing spawn children and the fork server: they start a fresh interpreter, so the tracer must install itself
there too.

`multiprocessing.spawn.get_command_line` builds `python -c 'from multiprocessing.spawn import spawn_main; ...'`
for every spawn child (torch.multiprocessing.spawn and DataLoader workers with the spawn context included). The
forkserver start method (the default from Python 3.14) starts one server with `python -c 'from
multiprocessing.forkserver import main; ...'` through `multiprocessing.util.spawnv_passfds`, and forks every
child from it: a traced server hands the tracer down as a traced fork does. The wrapped functions prefix a session
install; each child then writes its findings where the parent reads them.
"""

from __future__ import annotations

import atexit
import functools
import multiprocessing.spawn
import multiprocessing.util
import sys
from pathlib import Path

_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)


def trace_spawn_children(session) -> None:
    original = multiprocessing.spawn.get_command_line

    @functools.wraps(original)
    def get_command_line(**kwds):
        command = original(**kwds)
        session.environment.launched()
        return _tracing(command, session)

    multiprocessing.spawn.get_command_line = get_command_line
    _trace_fork_server(session)


def _trace_fork_server(session) -> None:
    original = multiprocessing.util.spawnv_passfds

    @functools.wraps(original)
    def spawnv_passfds(path, args, passfds):
        if _FORK_SERVER in _program_text(args):  # not the resource tracker, which runs no code of the program
            session.environment.launched()
            args = _tracing(list(args), session)
        return original(path, args, passfds)

    multiprocessing.util.spawnv_passfds = spawnv_passfds


#: The program text of the fork server's command line.
_FORK_SERVER = "from multiprocessing.forkserver import main"


def _program_text(command) -> str:
    return command[command.index("-c") + 1] if "-c" in command else ""


def _tracing(command: list[str], session) -> list[str]:
    """`command` (`python ... -c TEXT`) with a session install before TEXT."""
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
