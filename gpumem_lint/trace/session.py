"""One traced process: the hooks it installs, when, and the records it leaves.

Before the program runs, only torch-free hooks go in: environment writes and program launches (environment.py),
fork and `os._exit` handlers, the spawn command line. The storage tracker and the torch patches go in right after the
program's own first `import torch` finishes, so the program imports torch exactly when it would without us.

Child processes write their findings to `<records>/<pid>.json`; the parent merges them at the end. Fork children
(DataLoader workers among them) inherit this session and leave through `os._exit`; spawn children install a
session of their own from the command line (children.py) and leave through atexit.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

from gpumem_lint.trace.crashes import CaughtErrors, explain
from gpumem_lint.trace.environment import Environment
from gpumem_lint.trace.findings import Finding, FindingLog, Observation
from gpumem_lint.trace.sites import SiteFinder, executed_first_party_files


class Session:
    def __init__(
        self,
        records: Path,
        *,
        max_ops: int | None = None,
        max_seconds: float | None = None,
        max_steps: int | None = None,
    ) -> None:
        self.records = records
        self.max_ops = max_ops
        self.max_seconds = max_seconds
        self.max_steps = max_steps
        self.sites = SiteFinder()
        self.log = FindingLog()
        #: View aliases read after a write: never reported alone, they confirm static findings.
        self.evidence = FindingLog()
        self.environment = Environment(self.sites, self.log, self.warn_once)
        #: Exceptions a hazard explains that the program caught (Python 3.12+, while calls are followed).
        self.caught = CaughtErrors(self.sites)
        self.sites.on_handled = self.caught.handled
        self.sites.on_reraised = self.caught.reraised
        self.tracker = None
        self.mode = None
        self.pid = os.getpid()
        self.is_child = False
        self._warned = False
        self._real_exit = os._exit
        #: Set by the command: writes the report when the program ends itself with os._exit; returns the code.
        self.on_os_exit = None

    # -- installation --------------------------------------------------------------------------------------

    def install(self) -> None:
        self.environment.install([])  # never undone: this process is traced to its end
        os.register_at_fork(after_in_child=self._after_fork_in_child)
        os._exit = self._exit
        from gpumem_lint.trace.children import trace_spawn_children

        trace_spawn_children(self)
        if "torch" in sys.modules:
            self._torch_imported()
        else:
            sys.meta_path.insert(0, _TorchImportWatcher(self._torch_imported))

    def _torch_imported(self) -> None:
        self.environment.record("import_torch")
        # Python 3.12+: from here a site is the top of a stack, not a walk over the frames. Not sooner: torch's
        # import starts some thousands of functions, each a monitoring event, and no operator runs before it.
        self.sites.follow_calls()
        try:
            from gpumem_lint.trace import patches
            from gpumem_lint.trace.tracker import StorageMode, Tracker

            tracker = Tracker(self.sites, self.log, self.evidence, self.warn_once)
            tracker.max_ops = self.max_ops
            tracker.max_steps = self.max_steps
            if self.max_seconds is not None:
                tracker.deadline = time.monotonic() + self.max_seconds
            tracker.in_child = self.is_child
            tracker.on_stop = self._tracing_stopped
            if self.max_steps is not None:
                tracker.sample_over = self.records / "sample-over"
            patches.install(tracker, self.environment)  # for the rest of the run: never undone
            self.mode = StorageMode(tracker)
            self.mode.__enter__()  # stays on this thread's mode stack until tracing stops
            self.tracker = tracker
        except Exception as error:
            self.warn_once(f"storage tracing is off: it could not start ({error!r})")

    def _tracing_stopped(self) -> None:
        """Tracing stopped (a limit, an internal error): the program runs on without the dispatch mode, unless
        another mode went on above ours (taking ours off would take that one's place); sites walk again."""
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        if _get_current_dispatch_mode() is self.mode:
            self.mode.__exit__(None, None, None)
        self.sites.stop_following()
        tracker = self.tracker
        if tracker is not None and tracker.stopped_by == "--trace-steps" and not tracker.in_child:
            try:
                tracker.sample_over.touch()
            except OSError:
                pass  # workers trace on; their findings stay true

    def on_uncaught(self, error: BaseException) -> None:
        """The program ends with `error`: when a hazard explains it, that is a finding (crashes.py)."""
        try:
            self.caught.ended_with(error)
            finding = explain(error, self.sites)
        except Exception as failure:
            self.warn_once(f"the program's exception could not be read ({failure!r})")
            return
        if finding is not None:
            self.log.add_evidence_of_crash(finding)

    def warn_once(self, text: str) -> None:
        if not self._warned:
            self._warned = True
            print(f"gpumem-lint trace: warning: {text}", file=sys.stderr, flush=True)

    # -- the end of a process ------------------------------------------------------------------------------

    def stop(self) -> None:
        self.sites.stop_following()
        if self.tracker is not None:
            self.tracker.active = False
            try:
                self.tracker.finish()
            except Exception as error:
                self.warn_once(f"tracing could not finish ({error!r})")
        self.environment.flush()
        self.log.extend(self.caught.findings())

    def findings(self) -> list[Finding]:
        """This process's findings and those its children left, merged."""
        merged = FindingLog()
        merged.extend(self.log)
        for path in sorted(self.records.glob("*.json")):
            try:
                merged.extend(Finding.from_json(item) for item in json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a child killed while writing: its records are lost, the rest are not
        return list(merged)

    def observation(self, script: str | None) -> Observation:
        """What this process and its children observed (after `stop()`)."""
        return Observation(
            findings=self.findings(),
            evidence=list(self.evidence),
            seen=set(self.sites.seen),
            files=[str(path) for path in executed_first_party_files(script, self.sites)],
            stopped_by=self.tracker.stopped_by if self.tracker else None,
        )

    def write_child_records(self) -> None:
        """In a child process: leave this process's findings for the parent."""
        self.stop()
        findings = []
        for finding in self.log:
            finding.pid = finding.pid or os.getpid()
            findings.append(finding.to_json())
        if not findings:
            return
        path = self.records / f"{os.getpid()}.json"
        temporary = path.with_suffix(".tmp")
        try:
            temporary.write_text(json.dumps(findings), encoding="utf-8")
            temporary.replace(path)
        except OSError:
            pass

    def _after_fork_in_child(self) -> None:
        self.is_child = True
        if self.tracker is not None:
            self.tracker.in_child = True
        self.log.clear()  # the parent reports its own findings
        self.evidence.clear()

    def _exit(self, code: int) -> None:
        try:
            if self.is_child or os.getpid() != self.pid:
                self.write_child_records()
            elif self.on_os_exit is not None:
                code = self.on_os_exit(code)
        except Exception:
            pass
        self._real_exit(code)


class _TorchImportWatcher(importlib.abc.MetaPathFinder):
    """Calls `on_import` once `import torch` has finished executing torch/__init__.py."""

    def __init__(self, on_import) -> None:
        self._on_import = on_import

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _NotifyingLoader(spec.loader, self._on_import)
        return spec


class _NotifyingLoader(importlib.abc.Loader):
    def __init__(self, loader, on_import) -> None:
        self._loader = loader
        self._on_import = on_import

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = module.__spec__.loader = self._loader  # torch sees its own loader
        self._loader.exec_module(module)
        self._on_import()
