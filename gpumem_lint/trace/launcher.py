"""Run a script or module as `__main__` in this interpreter, the way `python SCRIPT` and `python -m MODULE` do.

What the program can observe is kept as the interpreter sets it: `sys.argv`, `sys.path[0]`, a fresh
`__main__` module with `__file__` (so spawn children import the user's script), the traceback of an uncaught
exception (our frames removed), `sys.exit` codes and messages, and the order of the shutdown that follows:
non-daemon threads are joined, then atexit handlers run. Only then does the caller write its report.
"""

from __future__ import annotations

import atexit
import builtins
import itertools
import linecache
import os
import re
import runpy
import sys
import threading
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from importlib.machinery import SourceFileLoader
from pathlib import Path

_TRACE_DIR = str(Path(__file__).resolve().parent) + os.sep
_DISPATCH_HOOK = str(Path(__file__).resolve().with_name("tracker.py"))


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    interrupted: bool = False  # an uncaught KeyboardInterrupt: the process must die of SIGINT, as python does


def run_script(path: str, args: list[str], on_uncaught: Callable[[BaseException], None]) -> Outcome:
    absolute = os.path.abspath(path)
    source = Path(absolute).read_bytes()  # the command checked that it can be read
    main = _fresh_main()
    main.__file__ = absolute
    main.__cached__ = None
    main.__loader__ = SourceFileLoader("__main__", absolute)
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(absolute)

    def body() -> None:
        # dont_inherit: our own `from __future__` imports must not leak into the user's code.
        code = compile(source, absolute, "exec", dont_inherit=True)
        exec(code, main.__dict__)

    return _run(body, on_uncaught)


def run_notebook(path: str, args: list[str], on_uncaught: Callable[[BaseException], None]) -> Outcome:
    """A notebook's code cells in order in one `__main__` namespace, as `jupyter nbconvert --execute` runs them:
    each cell is compiled when its turn comes (a syntax error in cell 3 ends the run after cells 1 and 2 ran),
    with IPython syntax masked as the linter masks it (`notebook.mask`). Code objects carry the notebook's path
    and the rows of its joined code cells (`Notebook.text`), which the report maps back to cells; linecache holds
    that text, so a traceback quotes the cell's line. As under Jupyter, `__main__` has no `__file__`."""
    from gpumem_lint.notebook import read_notebook

    absolute = os.path.abspath(path)
    notebook = read_notebook(Path(absolute).read_bytes())  # the command checked that it reads
    main = _fresh_main()
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(absolute)
    text = notebook.text
    lines = text.splitlines(keepends=True)
    linecache.cache[absolute] = (len(text), None, lines, absolute)  # mtime None: checkcache keeps it

    def body() -> None:
        row = 1
        for cell in notebook.cells:
            try:
                code = compile("\n" * (row - 1) + cell.masked, absolute, "exec", dont_inherit=True)
            except SyntaxError as error:
                if error.lineno is not None and 0 < error.lineno <= len(lines):
                    error.text = lines[error.lineno - 1]  # compile() quoted the line from the file, the JSON
                raise
            exec(code, main.__dict__)
            row += cell.rows

    return _run(body, on_uncaught, _cell_traceback_printer(absolute, notebook))


def run_module(name: str, args: list[str], on_uncaught: Callable[[BaseException], None]) -> Outcome:
    _fresh_main()
    sys.argv = ["-m", *args]  # runpy puts the module's file in argv[0], as `python -m` does
    sys.path[0] = os.getcwd()
    return _run(lambda: runpy._run_module_as_main(name, alter_argv=True), on_uncaught)


def shut_down() -> None:
    """What the interpreter does after `__main__` finishes: join non-daemon threads, then run atexit handlers."""
    threading._shutdown()
    atexit._run_exitfuncs()


def _fresh_main() -> types.ModuleType:
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    main.__spec__ = None
    main.__package__ = None
    sys.modules["__main__"] = main
    return main


def _run(body, on_uncaught: Callable[[BaseException], None], print_uncaught=None) -> Outcome:
    """`on_uncaught` sees the exception that ends the program (after its traceback is printed): evidence."""
    print_uncaught = print_uncaught or _print_uncaught
    try:
        body()
    except SystemExit as exit_:
        return Outcome(_system_exit_code(exit_.code))
    except KeyboardInterrupt as error:
        print_uncaught(error)
        return Outcome(130, interrupted=True)
    except BaseException as error:
        print_uncaught(error)
        on_uncaught(error)
        return Outcome(1)
    return Outcome(0)


def _system_exit_code(code) -> int:
    """As Py_Exit's handling of SystemExit: None is 0, an int is itself, anything else is printed and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_uncaught(error: BaseException) -> None:
    _strip_own_frames(error, set())
    sys.stderr.flush()
    sys.excepthook(type(error), error, error.__traceback__)


def _cell_traceback_printer(absolute: str, notebook) -> Callable[[BaseException], None]:
    """A notebook's traceback names the cell and its row (`File "nb.ipynb", cell 3, line 2`). The traceback
    module prints it, which quotes lines from linecache (the interpreter's own printer reads them from the file,
    the notebook's JSON); an `sys.excepthook` the program set is called as for a script."""
    frame_line = re.compile(rf'^(\s*File "{re.escape(absolute)}", )line (\d+)', re.MULTILINE)

    def in_cell(match: re.Match) -> str:
        cell, row = notebook.cell_at(int(match.group(2)))
        return f"{match.group(1)}cell {cell.number}, line {row}"

    hook = sys.excepthook  # the interpreter's (or the CLI library's, which calls it) before the program runs

    def print_uncaught(error: BaseException) -> None:
        if sys.excepthook is not hook:
            _print_uncaught(error)
            return
        _strip_own_frames(error, set())
        sys.stderr.flush()
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        sys.stderr.write(frame_line.sub(in_cell, text))
        sys.stderr.flush()

    return print_uncaught


def _launcher_dirs() -> tuple[str, ...]:
    """gpumem-lint and the CLI libraries that called it: the frames above the program's first one."""
    modules = [sys.modules.get(name) for name in ("gpumem_lint", "typer", "click")]
    return tuple(str(Path(m.__file__).resolve().parent) + os.sep for m in modules if m and m.__file__)


def _torch_dir() -> str:
    torch = sys.modules.get("torch")
    return str(Path(torch.__file__).resolve().parent) + os.sep if torch and torch.__file__ else "\0"


def _strip_own_frames(error: BaseException | None, seen: set[int]) -> None:
    """Remove the launcher's and the tracer's frames, so the traceback reads as it would without `trace`."""
    if error is None or id(error) in seen:
        return
    seen.add(id(error))
    entries = []
    tb = error.__traceback__
    leading = True
    # The torch frames the dispatch hook called into (OpOverload.__call__) go with it; those a wrapper of a torch
    # function called into (`torch.autograd.backward`'s) are the original's, which the plain run shows too.
    after_own = False
    while tb is not None:
        filename = os.path.realpath(tb.tb_frame.f_code.co_filename)
        own = filename.startswith(_launcher_dirs() if leading else _TRACE_DIR)
        if own:
            after_own = not leading and filename == _DISPATCH_HOOK
        elif after_own and filename.startswith(_torch_dir()):
            pass
        else:
            leading = after_own = False
            entries.append(tb)
        tb = tb.tb_next
    for first, second in itertools.pairwise(entries):
        first.tb_next = second
    if entries:
        entries[-1].tb_next = None
    # None when every frame was ours: a syntax error in the program, which python prints without a traceback.
    error.__traceback__ = entries[0] if entries else None
    _strip_own_frames(error.__cause__, seen)
    _strip_own_frames(error.__context__, seen)
