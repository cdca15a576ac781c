"""Source sites: the innermost frame of the user's own code above the current call.

Frames in torch, the standard library, installed packages and gpumem-lint are library frames; the verdict is
cached per code object. Two ways to find the innermost user frame:

- **Following calls** (Python 3.12+, `sys.monitoring`, after `follow_calls()`): each thread keeps the stack of its
  user frames, pushed when a user function starts or resumes and popped when it returns, yields or unwinds. A
  library function's start disables its own event on its first call, so library code runs unmonitored; user
  code pays two callbacks per call and nothing per line. A lookup is then the top of a list, whatever the depth
  of the library frames below it (an operator in torchvision's ResNet sits some 18 frames under the user's line).
  A pop that does not match the top (a frame the stack never saw) drops the thread's stack; the next lookup walks
  the frames and rebuilds it.
- **Walking the frames** (`f_back`) from the caller up: older Pythons, and until `follow_calls()`.

Either way a site is cached per code object and instruction offset, so a statement's site is made (and recorded as
seen) once, not once per operator.

While following calls, the same tool also tells `on_handled` of each exception a handler in user code receives and
`on_reraised` of each one a handler raises again (`with` and `finally` blocks are handlers too): what the program
caught (crashes.py).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Site:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{display_path(self.path)}:{self.line}"

    def to_json(self) -> list:
        return [self.path, self.line]

    @classmethod
    def from_json(cls, value: list) -> Site:
        return cls(value[0], value[1])


def display_path(path: str) -> str:
    """Relative to the current directory when below it, as `check` prints paths."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else path
    except (OSError, ValueError):
        return path


def _library_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]}
    roots.add(str(Path(__file__).resolve().parent.parent))  # gpumem_lint itself
    roots.update(p for p in sys.path if p.rstrip(os.sep).endswith(("site-packages", "dist-packages")))
    return tuple(sorted({os.path.realpath(r) + os.sep for r in roots if r}))


_monitoring = getattr(sys, "monitoring", None)


class SiteFinder:
    """`user_site()` returns the innermost frame outside library code, or None (no user frame on the stack)."""

    def __init__(self, extra_library_roots: tuple[str, ...] = ()) -> None:
        self._roots = _library_roots() + tuple(os.path.realpath(r) + os.sep for r in extra_library_roots)
        #: id(code) -> whether it is user code; the code objects are kept (below), so no id is reused.
        self._is_user: dict[int, bool] = {}
        #: filename -> whether it is the user's: one realpath (a stat per path component) per file, not per code
        #: object (importing torch under the tracer starts some thousands of functions in a few hundred files).
        self._user_files: dict[str, bool] = {}
        self._user_codes: list = []
        self._library_codes: list = []
        #: (id(code), instruction offset) -> its Site.
        self._sites: dict[tuple[int, int], Site] = {}
        #: Every user line a captured site pointed at: what the cross-reference calls "reached".
        self.seen: set[tuple[str, int]] = set()
        #: While following calls: per thread, `frames` is its stack of user frames (None: rebuild it).
        self._threads: threading.local | None = None
        self._tool: int | None = None
        #: Told of exceptions while following calls: `on_handled(exception)` for a handler in user code,
        #: `on_reraised(exception)` for any handler that raises it again.
        self.on_handled = None
        self.on_reraised = None

    def is_user_file(self, filename: str) -> bool:
        verdict = self._user_files.get(filename)
        if verdict is None:
            # <frozen runpy>, <string>, <stdin>: nothing to point at
            verdict = not filename.startswith("<") and not os.path.realpath(filename).startswith(self._roots)
            self._user_files[filename] = verdict
        return verdict

    def _user_code(self, code) -> bool:
        verdict = self._is_user.get(id(code))
        if verdict is None:
            verdict = self._is_user[id(code)] = self.is_user_file(code.co_filename)
            (self._user_codes if verdict else self._library_codes).append(code)
            if verdict and self._tool is not None:
                try:
                    _monitoring.set_local_events(self._tool, code, _FRAME_EVENTS)
                except ValueError:  # a code object that cannot be instrumented: from now on, walk the frames
                    self._threads = None
        return verdict

    def is_user_caller(self, depth: int) -> bool:
        """Whether the frame `depth` levels above the caller runs user code (False where there is no such frame:
        autograd's engine calls ops from C++, on a thread of its own for a GPU)."""
        try:
            code = sys._getframe(depth + 1).f_code
        except ValueError:
            return False
        verdict = self._is_user.get(id(code))
        return self._user_code(code) if verdict is None else verdict

    def user_site(self) -> Site | None:
        threads = self._threads
        if threads is not None:
            frames = getattr(threads, "frames", None)
            if frames is None:
                frames = threads.frames = self._user_frames(sys._getframe(1))
            return self._site(frames[-1]) if frames else None
        frame = sys._getframe(1)
        is_user = self._is_user
        while frame is not None:
            verdict = is_user.get(id(frame.f_code))
            if verdict is None:
                verdict = self._user_code(frame.f_code)
            if verdict:
                return self._site(frame)
            frame = frame.f_back
        return None

    def _site(self, frame) -> Site:
        key = (id(frame.f_code), frame.f_lasti)
        site = self._sites.get(key)
        if site is None:
            site = self._sites[key] = Site(frame.f_code.co_filename, frame.f_lineno)
            self.seen.add((site.path, site.line))
        return site

    def _user_frames(self, frame) -> list:
        """The user frames on the stack from `frame` up, outermost first."""
        frames = []
        while frame is not None:
            if self._user_code(frame.f_code):
                frames.append(frame)
            frame = frame.f_back
        frames.reverse()
        return frames

    # -- following calls (sys.monitoring) --------------------------------------------------------------------

    def follow_calls(self) -> bool:
        """Keep each thread's user frames from now on (Python 3.12+); False where that cannot be done."""
        if _monitoring is None or self._tool is not None:
            return self._tool is not None
        tool = next((t for t in _FREE_TOOLS if _monitoring.get_tool(t) is None), None)
        if tool is None:
            return False  # debuggers, coverage and profilers hold every id: walk instead
        _monitoring.use_tool_id(tool, "gpumem-lint trace")
        events = _monitoring.events
        for event, callback in (
            (events.PY_START, self._on_start),
            (events.PY_RESUME, self._on_start),
            (events.PY_THROW, self._on_throw),
            (events.PY_RETURN, self._on_leave),
            (events.PY_YIELD, self._on_leave),
            (events.PY_UNWIND, self._on_unwind),
            (events.EXCEPTION_HANDLED, self._on_handled),
            (events.RERAISE, self._on_reraise),
        ):
            _monitoring.register_callback(tool, event, callback)
        self._tool = tool
        self._threads = threading.local()
        for code in self._user_codes:
            _monitoring.set_local_events(tool, code, _FRAME_EVENTS)
        watched = events.PY_START | events.PY_THROW | events.PY_UNWIND
        if self.on_handled is not None:
            watched |= events.EXCEPTION_HANDLED | events.RERAISE
        _monitoring.set_events(tool, watched)
        return True

    def stop_following(self) -> None:
        """Back to walking the frames; library code runs unmonitored again."""
        tool, self._tool = self._tool, None
        if tool is None:
            return
        self._threads = None
        _monitoring.set_events(tool, 0)
        for code in self._user_codes:
            _monitoring.set_local_events(tool, code, 0)
        for event in _ALL_EVENTS:
            _monitoring.register_callback(tool, event, None)
        _monitoring.free_tool_id(tool)

    # The callbacks run inside the program: each does a few lookups and never raises.

    def _on_start(self, code, offset):
        verdict = self._is_user.get(id(code))
        if verdict is None:
            try:
                verdict = self._user_code(code)
            except Exception:  # a callback's exception would surface in the program: this code stays unmonitored
                return _monitoring.DISABLE
        if not verdict:
            return _monitoring.DISABLE  # a library function: its start is never reported again
        frames = getattr(self._threads, "frames", None)
        if frames is not None:
            frames.append(sys._getframe(1))
        return None

    def _on_throw(self, code, offset, exception):
        if self._is_user.get(id(code)):
            frames = getattr(self._threads, "frames", None)
            if frames is not None:
                frames.append(sys._getframe(1))

    def _on_leave(self, code, offset, value):
        frames = getattr(self._threads, "frames", None)
        if frames is not None:
            if frames and frames[-1].f_code is code:
                frames.pop()
            else:
                self._threads.frames = None  # out of step with the stack: rebuilt by the next lookup

    def _on_unwind(self, code, offset, exception):
        if self._is_user.get(id(code)):
            self._on_leave(code, offset, exception)

    def _on_handled(self, code, offset, exception):
        try:
            verdict = self._is_user.get(id(code))
            if verdict is None:
                verdict = self._user_code(code)
            if verdict:
                self.on_handled(exception)
        except Exception:
            pass  # the program's own handling goes on as without the tracer

    def _on_reraise(self, code, offset, exception):
        try:
            self.on_reraised(exception)
        except Exception:
            pass


if _monitoring is not None:
    _events = _monitoring.events
    _FRAME_EVENTS = _events.PY_RETURN | _events.PY_YIELD | _events.PY_RESUME
    _ALL_EVENTS = (
        _events.PY_START,
        _events.PY_RESUME,
        _events.PY_THROW,
        _events.PY_RETURN,
        _events.PY_YIELD,
        _events.PY_UNWIND,
        _events.EXCEPTION_HANDLED,
        _events.RERAISE,
    )
    #: The ids sys.monitoring leaves to tools other than debuggers, coverage, profilers and optimizers.
    _FREE_TOOLS = (3, 4)


def executed_first_party_files(script: str | None, sites: SiteFinder) -> list[Path]:
    """The script and the imported modules that are the user's own code (not stdlib, packages, torch)."""
    files = {Path(script).resolve()} if script else set()
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if filename and filename.endswith(".py") and sites.is_user_file(filename):
            files.add(Path(filename).resolve())
    return sorted(path for path in files if path.is_file())
