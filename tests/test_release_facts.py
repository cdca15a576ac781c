"""GML407 against the installed torch (CPU is enough): each program deletes a name and calls
`torch.cuda.empty_cache()`; it is run with that call replaced by a probe that reports whether the
deleted name's storage is still alive, and linted. The rule must flag the `del` exactly when the
storage survived (docs/facts.md F32). Which references keep a storage alive does not depend on the
device, so CPU tensors stand in for CUDA ones."""

from __future__ import annotations

import gc
import re
import textwrap
import weakref

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import RULES_BY_CODE

torch = pytest.importorskip("torch")

#: name -> (program, whether the deleted storage survives the `del`)
_PROGRAMS = {
    "optimizer_keeps_parameters": (
        """
        model = torch.nn.Linear(64, 64)
        optimizer = torch.optim.AdamW(model.parameters())
        del model
        torch.cuda.empty_cache()
        """,
        True,
    ),
    "optimizer_deleted_too": (
        """
        model = torch.nn.Linear(64, 64)
        optimizer = torch.optim.AdamW(model.parameters())
        del model, optimizer
        torch.cuda.empty_cache()
        """,
        False,
    ),
    "attribute_keeps_tensor": (
        """
        class Tracker:
            def update(self, logits):
                self.last = logits
                del logits
                torch.cuda.empty_cache()

        Tracker().update(torch.randn(64))
        """,
        True,
    ),
    "attribute_cleared": (
        """
        class Tracker:
            def update(self, size):
                logits = torch.randn(size)
                self.last = logits
                del logits
                self.last = None
                torch.cuda.empty_cache()

        Tracker().update(64)
        """,
        False,
    ),
    "view_keeps_storage": (
        """
        x = torch.randn(64, 64)
        first_row = x[0]
        del x
        torch.cuda.empty_cache()
        """,
        True,
    ),
    "detach_keeps_storage": (
        """
        x = torch.randn(64)
        y = x.detach()
        del x
        torch.cuda.empty_cache()
        """,
        True,
    ),
    "numpy_keeps_storage": (
        """
        x = torch.randn(64)
        array = x.numpy()
        del x
        torch.cuda.empty_cache()
        """,
        True,
    ),
    "state_dict_keeps_parameters": (
        """
        model = torch.nn.Linear(64, 64)
        weights = model.state_dict()
        del model
        torch.cuda.empty_cache()
        """,
        True,
    ),
    "list_keeps_tensor": (
        """
        outputs = []
        for step in range(3):
            out = torch.randn(64) * step
            outputs.append(out)
            del out
            torch.cuda.empty_cache()
        """,
        True,
    ),
    "clone_of_view_is_a_copy": (
        """
        x = torch.randn(64, 64)
        first_row = x[0].clone()
        del x
        torch.cuda.empty_cache()
        """,
        False,
    ),
    "scalar_read_out": (
        """
        x = torch.randn(64)
        total = x.sum().item()
        del x
        torch.cuda.empty_cache()
        """,
        False,
    ),
    "item_of_a_dict": (
        """
        def model(x):
            return {"loss": x.sum(), "logits": x * 2}

        out = model(torch.randn(64, 64))
        loss = out["loss"]
        del out
        torch.cuda.empty_cache()
        """,
        False,
    ),
    "batches_of_a_loader": (
        """
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4)), batch_size=4)
        for (batch,) in loader:
            score = batch.sum()
            del batch
            torch.cuda.empty_cache()
        """,
        False,
    ),
    "attribute_of_a_deleted_object": (
        """
        class Output:
            def __init__(self):
                self.past = torch.randn(64)

        out = Output()
        past = out.past
        del past, out
        gc.collect()
        torch.cuda.empty_cache()
        """,
        False,
    ),
    "spent_parameters_generator": (
        """
        model = torch.nn.Linear(64, 64)
        params = model.parameters()
        optimizer = torch.optim.SGD(params, lr=0.1)
        del model, optimizer
        torch.cuda.empty_cache()
        """,
        False,
    ),
    "object_of_unknown_class": (
        """
        class Meter:
            def __init__(self):
                self.total = 0.0

            def add(self, value):
                self.total += value.sum().item()

        meter = Meter()
        x = torch.randn(64)
        meter.add(x)
        del x
        torch.cuda.empty_cache()
        """,
        False,
    ),
    "optimizer_of_groups_filled_on_another_path": (
        """
        encoder, head = torch.nn.Linear(64, 64), torch.nn.Linear(64, 2)
        train_encoder = False
        groups = [{"params": head.parameters()}]
        if train_encoder:
            groups.append({"params": encoder.parameters()})
        optimizer = torch.optim.SGD(groups, lr=0.1)
        if not train_encoder:
            del encoder
            torch.cuda.empty_cache()
        """,
        False,
    ),
    "rebound_on_the_path_that_deletes": (
        """
        encoder = torch.nn.Linear(64, 64)
        encoders = [encoder]
        train_encoder = False
        if not train_encoder:
            encoder = torch.nn.Linear(64, 64)
        score = encoder(torch.randn(64)).sum().item()
        if not train_encoder:
            del encoder
            torch.cuda.empty_cache()
        """,
        False,
    ),
    # `shard` holds the last key's tensor; the loaded dict's other tensors go with `del`.
    "one_item_of_a_dict_kept": (
        """
        def load():
            return {"a": torch.randn(64), "b": torch.randn(64)}

        state_dict = load()
        for key in sorted(state_dict.keys()):
            shard = {key: state_dict[key]}
        del state_dict
        torch.cuda.empty_cache()
        """,
        False,
    ),
    # CPython 3.11+ moves a temporary argument into the callee's frame: `del` there frees it.
    "temporary_argument": (
        """
        def release(tensor):
            del tensor
            torch.cuda.empty_cache()

        release(torch.randn(64))
        """,
        False,
    ),
}

_DEL = re.compile(r"^(\s*)del (\w+)", re.MULTILINE)


def _survives(program: str) -> bool:
    """Run `program` with a watch on the first deleted name just before its `del`, and with
    `empty_cache()` replaced by a probe; True when every watched storage was alive at each probe."""
    watched: list[weakref.ref] = []
    seen: list[bool] = []

    def watch(value) -> None:
        tensors = value.values() if isinstance(value, dict) else [value]
        for item in tensors:
            for tensor in item.parameters() if isinstance(item, torch.nn.Module) else [item]:
                watched.append(weakref.ref(tensor.untyped_storage()))

    def probe() -> None:
        gc.collect()
        seen.append(bool(watched) and all(ref() is not None for ref in watched))
        watched.clear()

    instrumented = _DEL.sub(lambda m: f"{m.group(1)}_watch({m.group(2)})\n{m.group(0)}", program)
    original = torch.cuda.empty_cache
    torch.cuda.empty_cache = probe
    try:
        exec(compile(instrumented, "<program>", "exec"), {"torch": torch, "gc": gc, "_watch": watch})
    finally:
        torch.cuda.empty_cache = original
    assert seen, "the program never reached empty_cache()"
    return all(seen)


@pytest.mark.parametrize(("program", "survives"), list(_PROGRAMS.values()), ids=list(_PROGRAMS))
def test_flagged_exactly_when_the_deleted_storage_survives(program, survives):
    program = textwrap.dedent(program)
    assert _survives(program) is survives
    source = "import gc\n\nimport torch\n" + program
    flagged = lint_source(source, "program.py", [RULES_BY_CODE["GML407"]])
    assert {d.code for d in flagged} <= {"GML407"}, [d.message for d in flagged]
    del_rows = {source[: m.start()].count("\n") + 1 for m in _DEL.finditer(source)}
    assert bool(flagged) is survives, [d.message for d in flagged]
    assert {d.start.row for d in flagged} <= del_rows
