"""The facts the tracer relies on (docs/facts.md, T1-T8), re-measured on the installed torch (T7: Python 3.12+)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from torch.utils._python_dispatch import TorchDispatchMode


class Recorder(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.outputs = []

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.outputs.append((str(func), out))
        return out


def test_t1_data_and_detach_reach_a_mode_as_the_same_op():
    x = torch.ones(3)
    with Recorder() as mode:
        x.data
        x.detach()
    assert [name for name, _ in mode.outputs] == ["aten.detach.default", "aten.detach.default"]


def test_t2_from_numpy_makes_a_new_storage_around_the_same_memory():
    array = np.zeros(4, dtype=np.float32)
    first, second = torch.from_numpy(array), torch.from_numpy(array)
    assert torch._C._storage_id(first) != torch._C._storage_id(second)
    assert first.untyped_storage().data_ptr() == second.untyped_storage().data_ptr() == array.ctypes.data


def test_t3_an_audit_hook_runs_on_every_id_call_tensor_hash_included():
    program = textwrap.dedent(
        """
        import sys, torch
        events = []
        tensor = torch.ones(1)
        sys.addaudithook(lambda event, args: events.append(event) if event == "builtins.id" else None)
        before = len(events)
        hash(tensor)
        {tensor: 1}
        print(len(events) - before)
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert int(result.stdout) >= 2


def test_t4_environ_writes_go_through_the_os_module_putenv_and_unsetenv(monkeypatch):
    import os

    calls = []
    monkeypatch.setattr(os, "putenv", lambda key, value: calls.append(("put", key)))
    monkeypatch.setattr(os, "unsetenv", lambda key: calls.append(("unset", key)))
    os.environ["GPUMEM_LINT_T4"] = "1"
    os.environ.update(GPUMEM_LINT_T4="2")
    del os.environ["GPUMEM_LINT_T4"]
    assert calls == [("put", b"GPUMEM_LINT_T4"), ("put", b"GPUMEM_LINT_T4"), ("unset", b"GPUMEM_LINT_T4")]


def test_t5_a_mode_that_does_not_skip_dynamo_does_not_import_it_on_the_first_op():
    program = textwrap.dedent(
        """
        import sys, torch
        from torch.utils._python_dispatch import TorchDispatchMode

        class Mode(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls):
                return False

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        before = "torch._dynamo" in sys.modules
        with Mode():
            torch.ones(2) + 1
        print(before, "torch._dynamo" in sys.modules)
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


def test_t6_storage_id_is_shared_by_views_and_not_by_copies():
    x = torch.arange(6.0)
    assert torch._C._storage_id(x) == torch._C._storage_id(x[2:].view(2, 2)) == torch._C._storage_id(x.detach())
    assert torch._C._storage_id(x) != torch._C._storage_id(x.clone())


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is Python 3.12+")
def test_t7_every_handler_reports_the_exception_handled_and_one_that_passes_it_on_reraise():
    import contextlib

    def in_with():
        with contextlib.nullcontext():
            raise KeyError("with")

    def in_finally():
        try:
            raise KeyError("finally")
        finally:
            pass

    def in_except():
        try:
            raise KeyError("except")
        except KeyError:
            pass

    watched = {function.__code__: function.__name__ for function in (in_with, in_finally, in_except)}
    seen, innermost = [], {}
    monitoring, events = sys.monitoring, sys.monitoring.events
    tool = next(tool for tool in (3, 4, 5) if monitoring.get_tool(tool) is None)

    def on(kind):
        def callback(code, offset, exception):
            if code in watched:
                seen.append((watched[code], kind))
                innermost.setdefault(watched[code], _innermost(exception.__traceback__))

        return callback

    monitoring.use_tool_id(tool, "gpumem-lint test")
    try:
        monitoring.register_callback(tool, events.EXCEPTION_HANDLED, on("handled"))
        monitoring.register_callback(tool, events.RERAISE, on("reraised"))
        monitoring.set_events(tool, events.EXCEPTION_HANDLED | events.RERAISE)
        passed_on = {}
        for function in (in_with, in_finally):
            try:
                function()
            except KeyError as error:
                passed_on[function.__name__] = _innermost(error.__traceback__)
        in_except()
    finally:
        monitoring.set_events(tool, 0)
        monitoring.free_tool_id(tool)
    kinds = {name: [kind for function, kind in seen if function == name] for name in watched.values()}
    assert kinds["in_except"] == ["handled"]
    for name in ("in_with", "in_finally"):  # each handler it passes (the frame's cleanup too) raises it again
        assert kinds[name] and kinds[name] == ["handled", "reraised"] * (len(kinds[name]) // 2)
    # The traceback entry where it was raised stays the same object as the exception propagates.
    assert all(passed_on[name] is innermost[name] for name in passed_on)


def _innermost(tb):
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb


class _Calls(TorchDispatchMode):
    """Records each op before running it: an op that raises is recorded too."""

    def __init__(self) -> None:
        super().__init__()
        self.names = []

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def test_t8_autograd_refuses_those_in_place_writes_before_they_reach_a_dispatch_mode():
    leaf = torch.zeros(4, requires_grad=True)
    first, _ = (torch.randn(4, requires_grad=True) * 1).chunk(2)
    writes = {
        "a leaf Variable that requires grad": lambda: leaf.add_(1),
        "a view of a leaf Variable": lambda: leaf[:2].mul_(2),
        "is a view and is being modified inplace": lambda: first.mul_(2),
    }
    with _Calls() as calls:
        for message, write in writes.items():
            with pytest.raises(RuntimeError, match=message):
                write()
    assert [name for name in calls.names if name.split(".")[1].endswith("_")] == []
