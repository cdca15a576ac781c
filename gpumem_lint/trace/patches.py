"""Python-level hooks for what never reaches a dispatch mode (torch).

`.data` and `.detach()` arrive as the same `aten.detach` op, `x.data = y` dispatches nothing, `from_numpy`
dispatches only `lift_fresh`, pickling to another process dispatches nothing (torch-runtime-facts.md §0.3-0.4).
Each wrapper calls the original first-class function and only records; a failure in the recording half stops
tracing (fail open) and never changes what the program sees.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing.queues
import multiprocessing.reduction
import sys
from collections.abc import Callable

import torch

from gpumem_lint.trace.tracker import Tracker


def install(tracker: Tracker, environment) -> Callable[[], None]:
    """Install every hook; returns the function that puts the originals back."""
    undo: list[Callable[[], None]] = []
    _track_data_attribute(tracker, undo)
    _track_from_numpy(tracker, undo)
    _track_state_dict(tracker, undo)
    _track_load_state_dict(tracker, undo)
    _track_optimizer_steps(tracker, undo)
    _track_backward(tracker, undo)
    _track_torch_save(tracker, undo)
    _track_process_crossings(tracker, undo)
    _track_cuda_events(environment, undo)
    _track_empty_cache(tracker, undo)

    def uninstall() -> None:
        for step in reversed(undo):
            step()

    return uninstall


def _replace(owner, name: str, value, undo: list) -> None:
    original = owner.__dict__[name] if isinstance(owner, type) and name in owner.__dict__ else getattr(owner, name)
    had_own = not isinstance(owner, type) or name in owner.__dict__
    setattr(owner, name, value)
    undo.append(lambda: setattr(owner, name, original) if had_own else delattr(owner, name))


def _guarded(tracker: Tracker, record) -> None:
    try:
        record()
    except Exception as error:
        tracker.fail(error)


def _track_data_attribute(tracker: Tracker, undo: list) -> None:
    descriptor = torch._C.TensorBase.data

    def get_data(self):
        tracker.next_detach_kind = "data"
        try:
            result = descriptor.__get__(self)
        finally:
            tracker.next_detach_kind = None
        if tracker.active:
            _guarded(tracker, lambda: tracker.on_data_taken(self, result))
        return result

    def set_data(self, value):
        descriptor.__set__(self, value)
        if tracker.active:
            _guarded(tracker, lambda: tracker.on_data_assigned(self))

    _replace(torch.Tensor, "data", property(get_data, set_data, doc=descriptor.__doc__), undo)


def _track_from_numpy(tracker: Tracker, undo: list) -> None:
    original = torch.from_numpy

    @functools.wraps(original)
    def from_numpy(array):
        tensor = original(array)
        if tracker.active:
            _guarded(tracker, lambda: tracker.on_from_numpy(array, tensor))
        return tensor

    _replace(torch, "from_numpy", from_numpy, undo)


def _track_state_dict(tracker: Tracker, undo: list) -> None:
    original = torch.nn.Module.state_dict

    @functools.wraps(original)
    def state_dict(self, *args, **kwargs):
        tracker.state_dict_depth += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            tracker.state_dict_depth -= 1

    _replace(torch.nn.Module, "state_dict", state_dict, undo)


def _track_load_state_dict(tracker: Tracker, undo: list) -> None:
    """Its copies into the parameters make no alias stale (`load_state_dict(model.state_dict())` copies each
    tensor onto itself); reading a stale alias still counts, and so does overwriting a saved tensor."""
    original = torch.nn.Module.load_state_dict

    @functools.wraps(original)
    def load_state_dict(self, *args, **kwargs):
        with _machinery(tracker):
            return original(self, *args, **kwargs)

    _replace(torch.nn.Module, "load_state_dict", load_state_dict, undo)


@contextlib.contextmanager
def _machinery(tracker: Tracker):
    tracker.machinery_depth += 1
    try:
        yield
    finally:
        tracker.machinery_depth -= 1


def _track_optimizer_steps(tracker: Tracker, undo: list) -> None:
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    def pre(optimizer, args, kwargs):
        tracker.optimizer_depth = 1

    def post(optimizer, args, kwargs):
        _guarded(tracker, tracker.on_step)

    for handle in (register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)):
        undo.append(handle.remove)

    original_init = torch.optim.Optimizer.__init__

    @functools.wraps(original_init)
    def init(self, *args, **kwargs):
        tracker.optimizer_made = True  # from now on a sampled step is an optimizer step
        return original_init(self, *args, **kwargs)

    _replace(torch.optim.Optimizer, "__init__", init, undo)


def _track_backward(tracker: Tracker, undo: list) -> None:
    """`Tensor.backward` calls `torch.autograd.backward`: where `--trace-steps` counts (Tracker.on_backward)."""
    original = torch.autograd.backward

    @functools.wraps(original)
    def backward(*args, **kwargs):
        _guarded(tracker, tracker.on_backward)
        return original(*args, **kwargs)

    _replace(torch.autograd, "backward", backward, undo)


def _track_torch_save(tracker: Tracker, undo: list) -> None:
    """`torch.save` reads tensors without dispatching: it counts as a read of every tensor it writes out."""
    original = torch.save

    @functools.wraps(original)
    def save(obj, *args, **kwargs):
        if tracker.active and tracker.pending:
            _guarded(tracker, lambda: tracker.on_serialized(_tensors_in(obj)))
        return original(obj, *args, **kwargs)

    _replace(torch, "save", save, undo)


def _track_process_crossings(tracker: Tracker, undo: list) -> None:
    reducers = multiprocessing.reduction.ForkingPickler._extra_reducers
    for cls in (torch.Tensor, torch.nn.Parameter):
        original = reducers.get(cls)
        if original is not None:
            reducers[cls] = _crossing_reducer(tracker, original)
            undo.append(functools.partial(reducers.__setitem__, cls, original))
    for cls, original in list(reducers.items()):
        if isinstance(cls, type) and issubclass(cls, (torch.UntypedStorage, torch.storage.TypedStorage)):
            reducers[cls] = _machinery_call(tracker, original)  # a storage's move into shared memory
            undo.append(functools.partial(reducers.__setitem__, cls, original))

    from torch.multiprocessing import reductions

    for name in ("rebuild_tensor", "rebuild_cuda_tensor"):
        _replace(reductions, name, _receiving_rebuild(tracker, getattr(reductions, name)), undo)

    original_put = multiprocessing.queues.Queue.put

    @functools.wraps(original_put)
    def put(self, obj, *args, **kwargs):
        tracker.settle()  # outside any dispatch: where a worker whose tracing stopped takes the mode off
        # The feeder thread pickles later, where no user frame is on the stack: note the site now.
        if tracker.active:
            _guarded(tracker, lambda: tracker.on_crossing(_tensors_in(obj), tracker.sites.user_site()))
        return original_put(self, obj, *args, **kwargs)

    _replace(multiprocessing.queues.Queue, "put", put, undo)

    original_share = torch.Tensor.share_memory_

    @functools.wraps(original_share)
    def share_memory_(self):
        with _machinery(tracker):  # the move into shared memory is torch's write, not the program's
            result = original_share(self)
        if tracker.active:
            _guarded(tracker, lambda: tracker.on_shared_on_purpose(self))
        return result

    _replace(torch.Tensor, "share_memory_", share_memory_, undo)


def _receiving_rebuild(tracker: Tracker, original):
    """Unpickling resolves these by name, so the wrapper sees every tensor that arrives from another process.
    The `set_` that rebuilds a tensor around the received storage is unpickling's write, not the program's."""

    @functools.wraps(original)
    def rebuild(*args, **kwargs):
        with _machinery(tracker):
            tensor = original(*args, **kwargs)
        if tracker.active and tracker.in_child:
            _guarded(tracker, lambda: tracker.on_received(tensor))
        return tensor

    return rebuild


def _machinery_call(tracker: Tracker, original):
    @functools.wraps(original)
    def call(*args, **kwargs):
        with _machinery(tracker):
            return original(*args, **kwargs)

    return call


def _crossing_reducer(tracker: Tracker, original):
    """Pickling a CPU tensor moves its storage into shared memory first (`set_` onto the shared copy): pickling's
    write, not the program's."""

    @functools.wraps(original)
    def reduce(tensor):
        if tracker.active:
            _guarded(tracker, lambda: tracker.on_crossing([tensor], tracker.sites.user_site()))
        with _machinery(tracker):
            return original(tensor)

    return reduce


def _track_cuda_events(environment, undo: list) -> None:
    """Where the CUDA driver and torch.cuda were first initialised, for messages and for fork children."""
    count = getattr(torch._C, "_cuda_getDeviceCount", None)
    if count is not None:

        @functools.wraps(count)
        def device_count(*args, **kwargs):
            environment.record("cuda_driver_init")
            return count(*args, **kwargs)

        _replace(torch._C, "_cuda_getDeviceCount", device_count, undo)

    # `_lazy_init` asks `is_initialized()` first: a hook there has returned before `_lazy_init` raises (a forked
    # child's "Cannot re-initialize CUDA", a CPU build's "Torch not compiled with CUDA"), so the program's
    # traceback, which multiprocessing prints itself in a child, holds no frame of ours.
    is_initialized = torch.cuda.is_initialized
    lazy_init_code = torch.cuda._lazy_init.__code__

    @functools.wraps(is_initialized)
    def traced_is_initialized():
        initialized = is_initialized()
        if not initialized and sys._getframe(1).f_code is lazy_init_code:
            environment.record("torch_cuda_init")
            environment.cuda_used()
        return initialized

    _replace(torch.cuda, "is_initialized", traced_is_initialized, undo)

    if torch.distributed.is_available():
        init_process_group = torch.distributed.init_process_group

        @functools.wraps(init_process_group)
        def traced_init_process_group(*args, **kwargs):
            environment.record("process_group_init")
            return init_process_group(*args, **kwargs)

        _replace(torch.distributed, "init_process_group", traced_init_process_group, undo)


def _track_empty_cache(tracker: Tracker, undo: list) -> None:
    original = torch.cuda.empty_cache

    @functools.wraps(original)
    def empty_cache():
        if not tracker.failed:  # counted after a sample too: it costs nothing per operator
            _guarded(tracker, tracker.on_empty_cache)
        return original()

    _replace(torch.cuda, "empty_cache", empty_cache, undo)


def _tensors_in(obj, depth: int = 0):
    """Tensors in an object and its containers, a few levels deep (what a queue item or checkpoint holds)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 4 and isinstance(obj, (list, tuple, set)):
        for item in obj:
            yield from _tensors_in(item, depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors_in(item, depth + 1)
