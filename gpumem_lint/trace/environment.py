"""Environment variables written after the moment that reads them, and forks after the CUDA driver started.

`os.putenv`/`os.unsetenv` are wrapped (`os.environ[...] = ...`, `.update`, `del`, `.pop` call them through the os
module's globals), forks are seen through `os.register_at_fork`, and the calls that start a new program
(subprocess, exec, spawn) are wrapped too. Not `sys.addaudithook`: an audit hook runs Python code on every
`id()` call (`builtins.id` is an audit event), and torch's `Tensor.__hash__` calls `id()`, so it slowed every
traced training step. Which event locks which variable, and what a late write does, is the static rules' lock-in table
(gpumem_lint/knowledge/lockin.toml). Events are known two ways: the tracer's wrappers record where they happened
(import torch, is_available(), torch.cuda initialisation, init_process_group), and at each write the state of
torch is asked directly, which also covers paths no wrapper sees (a first allocation).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

from gpumem_lint.knowledge.lockin import lockin_table
from gpumem_lint.trace.codes import CODES
from gpumem_lint.trace.findings import Finding, FindingLog
from gpumem_lint.trace.sites import Site, SiteFinder

#: os functions that start a program which reads its environment afresh (the other exec* and spawn* functions
#: call these through the os module's globals).
_LAUNCHERS = ("system", "execv", "execve", "posix_spawn", "posix_spawnp")


class Environment:
    def __init__(self, sites: SiteFinder, log: FindingLog, warn_once) -> None:
        self.sites = sites
        self.log = log
        self._warn_once = warn_once
        #: event id -> where it first happened (None: it happened, the site is unknown).
        self.events: dict[str, Site | None] = {}
        self.fork_site: Site | None = None
        self._cuda_parent_fork: Site | None = None
        self._table = lockin_table()
        #: Late writes wait for the end of the run: a process launched after them re-reads its environment, so
        #: they were meant for that child (a launcher), not late.
        self._late_writes: list[Finding] = []

    def record(self, event: str) -> None:
        if event not in self.events:
            self.events[event] = self.sites.user_site()

    # -- hooks -----------------------------------------------------------------------------------------------

    def install(self, undo: list) -> None:
        """Wrap the environment writers and program launchers; `undo` collects how to put them back."""
        for name, on_call in (("putenv", self._on_putenv), ("unsetenv", self._on_unsetenv)):
            _wrap(os, name, on_call, undo)
        for name in _LAUNCHERS:
            if hasattr(os, name):
                _wrap(os, name, lambda *args, **kwargs: self.launched(), undo)
        _wrap(subprocess.Popen, "__init__", lambda *args, **kwargs: self.launched(), undo)
        os.register_at_fork(before=self._before_fork, after_in_child=self.after_fork_in_child)

    def _on_putenv(self, name, value) -> None:
        self._guarded(lambda: self._on_write(_text(name), _text(value)))

    def _on_unsetenv(self, name) -> None:
        self._guarded(lambda: self._on_write(_text(name), None))

    def _before_fork(self) -> None:
        self._guarded(lambda: setattr(self, "fork_site", self.sites.user_site() if self._driver_started() else None))

    def _guarded(self, record) -> None:
        try:
            record()
        except Exception as error:
            self._warn_once(f"environment tracing stopped after an internal error ({error!r})")

    def _on_write(self, name: str, value: str | None) -> None:
        for row in self._table.variables:
            if row.rule is None or not row.covers(name):
                continue
            if row.value is not None and (value is None or not row.value.search(value)):
                continue
            happened = self._happened(row.event)
            if happened is None:
                continue
            event = self._table.events[happened[0]]  # what happened, which implies the row's event
            where = f" at {happened[1]}" if happened[1] else ""
            action = "unset" if value is None else "set"
            self._late_writes.append(
                Finding(
                    row.rule,
                    f"`{name}` was {action} after {event.phrase}{where}, which is when it is read: {row.effect}",
                    self.sites.user_site(),
                    [(event.title, happened[1])] if happened[1] else [],
                )
            )
            return

    def launched(self) -> None:
        self._late_writes.clear()

    def flush(self) -> None:
        """The run is over: the late writes no launch followed are findings."""
        self.log.extend(self._late_writes)
        self._late_writes.clear()

    def _happened(self, event: str) -> tuple[str, Site | None] | None:
        """The recorded or observed event that implies `event`, with its site when known."""
        for candidate in self._table.events_implying(event):
            if candidate in self.events:
                return candidate, self.events[candidate]
        for candidate in self._table.events_implying(event):
            if _observed_now(candidate):
                return candidate, None
        return None

    def _driver_started(self) -> bool:
        return self._happened("cuda_driver_init") is not None

    # -- fork children -------------------------------------------------------------------------------------

    def after_fork_in_child(self) -> None:
        self._cuda_parent_fork = self.fork_site

    def cuda_used(self) -> None:
        """Called when this process starts CUDA: in a child forked after the driver started, that fails."""
        if self._cuda_parent_fork is not None:
            self.log.add(
                Finding(
                    CODES["fork-after-cuda"],
                    "this process was forked after the CUDA driver had been initialised, and the child then used "
                    'CUDA: a forked child cannot use CUDA ("Cannot re-initialize CUDA in forked subprocess"); '
                    "use the spawn start method, or initialise CUDA only after the workers started",
                    self._cuda_parent_fork,
                    [("CUDA used in the child", self.sites.user_site())],
                )
            )
            self._cuda_parent_fork = None


def _observed_now(event: str) -> bool:
    """Ask torch whether `event` has happened, for the events whose state it exposes."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    if event == "import_torch":
        return True
    if event == "torch_cuda_init":
        return torch.cuda.is_initialized()
    if event == "first_allocation":
        return torch.cuda.is_initialized() and torch.cuda.memory_reserved() > 0
    if event == "process_group_init":
        return torch.distributed.is_available() and torch.distributed.is_initialized()
    return False


def _wrap(owner, name: str, before, undo: list) -> None:
    """Replace owner.name by a function that calls `before(*args)` and then the original."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        before(*args, **kwargs)
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)
    undo.append(lambda: setattr(owner, name, original))


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
