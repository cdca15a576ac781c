"""The saved-for-backward table must match the installed torch and what autograd does with it."""

import importlib.util
import json
import operator
import sys
from pathlib import Path

import pytest

from gpumem_lint.knowledge.autograd import saved_for_backward

ROOT = Path(__file__).resolve().parents[1]
TABLE_JSON = ROOT / "gpumem_lint" / "knowledge" / "saved_for_backward.json"
GENERATOR = ROOT / "scripts" / "generate_saved_tensors.py"
TABLE = saved_for_backward()
INPLACE_ERROR = "modified by an inplace operation"
OPERATORS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "**": operator.pow,
    "@": operator.matmul,
}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def generator(torch):
    # scripts/ is not a package, so load the generator from its path.
    spec = importlib.util.spec_from_file_location("generate_saved_tensors", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_table_matches_installed_torch(generator):
    checked_in = json.loads(TABLE_JSON.read_text())
    fresh = generator.build_table()
    stale = "saved_for_backward.json is stale; run `python scripts/generate_saved_tensors.py`:"
    assert fresh == checked_in, "\n".join([stale, *generator.diff_summary(checked_in, fresh)])


def test_loader_reads_every_row():
    rows = json.loads(TABLE_JSON.read_text())
    assert TABLE.torch_version == rows["torch_version"]
    assert TABLE.ops.keys() == rows["ops"].keys() and TABLE.modules.keys() == rows["modules"].keys()


def _raises_on_backward(torch, outputs) -> bool:
    loss = sum(t.sum() for t in outputs if t.requires_grad)
    try:
        loss.backward()
    except RuntimeError as error:
        assert INPLACE_ERROR in str(error)
        return True
    return False


# The facts the rules quote, each read through the loader: writing what an op kept breaks backward.


def _torch_function(name: str) -> bool:
    return name.startswith("torch.") and name.count(".") == 1


UNARY_FUNCTIONS = [n for n, op in TABLE.ops.items() if _torch_function(n) and op.arguments == ("input",)]


@pytest.mark.parametrize("name", UNARY_FUNCTIONS)
def test_writing_the_result_breaks_backward_exactly_when_it_is_kept(torch, name):
    # x = torch.sigmoid(w); x.mul_(2); x.sum().backward()
    w = (torch.rand(2, 3) + 0.5).requires_grad_()
    x = getattr(torch, name.removeprefix("torch."))(w if not name.endswith("_") else w.clone())
    x.mul_(2)
    assert _raises_on_backward(torch, [x]) == TABLE.saves_result(name)


def _other_operand(name):
    """How the second operand of a two-tensor op is kept: `other` for `a * b`, position 1 for `torch.mul`."""
    row = TABLE.ops[name]
    if name in OPERATORS and row.arguments == ("other",):
        return "other"
    if _torch_function(name) and row.arguments == ("input", "other") == row.differentiable:
        return 1
    return None


@pytest.mark.parametrize("name", [n for n in TABLE.ops if _other_operand(n) is not None])
def test_writing_the_other_operand_breaks_backward_exactly_when_it_is_kept(torch, name):
    # c = a * b; b.mul_(2); c.sum().backward()
    call = OPERATORS.get(name) or getattr(torch, name.removeprefix("torch."))
    a = (torch.rand(3, 3) + 0.5).requires_grad_()
    b = (torch.rand(3, 3) + 0.5).requires_grad_().clone()
    c = call(a, b)
    b.mul_(2)
    assert _raises_on_backward(torch, [c]) == (_other_operand(name) in TABLE.saved_arguments(name))


# Every row, every tensor the call touched, with all differentiable arguments requiring grad and with each alone.


def _modes(differentiable):
    return [tuple(differentiable), *((name,) for name in differentiable if len(differentiable) > 1)]


def _touched(generator, call) -> list:
    return [t for value in call.arguments.values() for t in generator._tensors(value)] + list(call.outputs)


def _kept_storages(generator, call, items) -> set[int]:
    storages = set()
    for item in items:
        if item in call.arguments:
            storages.update(generator._storage(t) for t in generator._tensors(call.arguments[item]))
        elif item != "internal":
            storages.add(generator._storage(call.outputs[int(item.removeprefix("output") or 0)]))
    return storages


def _check_every_write(torch, generator, run, row):
    """A write (under no_grad, where autograd allows it) breaks backward exactly when it reaches the
    storage of something the table says is kept."""
    for requires_grad in _modes(row.differentiable):
        for index in range(len(_touched(generator, run(set(requires_grad))))):
            call = run(set(requires_grad))  # a fresh graph for each write
            written = _touched(generator, call)[index]
            expected = generator._storage(written) in _kept_storages(generator, call, row.items(requires_grad))
            with torch.no_grad():
                written.copy_(written.clone())
            assert _raises_on_backward(torch, call.outputs) == expected, (requires_grad, index)


@pytest.mark.filterwarnings("ignore:nn.functional.* is deprecated")
@pytest.mark.parametrize("name", sorted(TABLE.ops))
def test_op_row_agrees_with_autograd(torch, generator, name):
    case = next(c for c in generator.op_cases() if c.key == name)
    _check_every_write(torch, generator, lambda grads: generator.run_op(case, grads), TABLE.ops[name])


@pytest.mark.parametrize("name", sorted(TABLE.modules))
def test_module_row_agrees_with_autograd(torch, generator, name):
    case = next(c for c in generator.module_cases() if c.name == name)
    _check_every_write(torch, generator, lambda grads: generator.run_module(case, grads), TABLE.modules[name])


def test_table_covers_the_ops_users_call():
    for name in ("torch.sigmoid", "torch.Tensor.relu_", "torch.nn.functional.linear", "*", "@", "**="):
        assert name in TABLE.ops, name
    for name in ("Linear", "Conv2d", "BatchNorm2d", "LayerNorm", "Embedding", "Dropout", "Softmax"):
        assert name in TABLE.modules, name
