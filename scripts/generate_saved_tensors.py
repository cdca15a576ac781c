"""Generate gpumem_lint/knowledge/saved_for_backward.json by running each op under autograd.

An in-place write to a tensor that autograd saved for backward makes the later
`backward()` raise "one of the variables needed for gradient computation has
been modified by an inplace operation".  Which tensors an op saves is decided
by torch's derivative formulas, and no schema says it, so we measure it: call
each op on small inputs that require grad, walk the graph it built and match
every `_saved_*` tensor of its nodes against the op's arguments and outputs by
storage.  A saved view of an argument (`weight.t()` inside `F.linear`) shares
the argument's version counter, so it counts as the argument.

What an op saves depends on which inputs require grad (`a * b` keeps `b` only
to compute `a`'s gradient), so each op is also run with one differentiable
argument requiring grad at a time, and each saved tensor is recorded with the
arguments whose gradient needs it.  tests/test_saved_for_backward.py
regenerates the table and checks it against autograd's own errors.

Usage: python scripts/generate_saved_tensors.py [--check]
"""

from __future__ import annotations

import argparse
import inspect
import json
import operator
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

OUT_PATH = Path(__file__).resolve().parents[1] / "gpumem_lint" / "knowledge" / "saved_for_backward.json"

#: Names of saved items that are not arguments.
OUTPUT, INTERNAL = "output", "internal"


@dataclass(frozen=True)
class Grad:
    """A floating-point tensor argument that may require grad (positive, so log and sqrt are defined)."""

    shape: tuple[int, ...]


@dataclass(frozen=True)
class GradList:
    """A list of `count` such tensors (`torch.cat(tensors)`): they require grad together."""

    count: int
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Case:
    """One Python call form: `key` is how the table names it, `arguments` its positional arguments in order
    (for a method or an operator the first is the receiver, `self`)."""

    key: str
    call: Callable
    arguments: tuple[tuple[str, object], ...]
    keywords: dict = field(default_factory=dict)
    inplace: bool = False  # writes its first argument, which must then not be a leaf that requires grad
    receiver: bool = False  # the first argument is `self`, not a call argument
    named: bool = True  # the argument names can be passed as keywords, which checks them

    @property
    def differentiable(self) -> tuple[str, ...]:
        return tuple(name for name, spec in self.arguments if isinstance(spec, (Grad, GradList)))


# Shapes: a batch of vectors, a square matrix, the inputs of a 1-d and of a 2-d convolution, a sequence.
V, M, C, IMG, SEQ = (2, 3), (3, 3), (1, 2, 5), (1, 2, 5, 5), (1, 2, 3)
X = (("input", Grad(V)),)
INDEX = torch.tensor([0, 2])
CONDITION = torch.tensor([[True, False, True], [False, True, False]])
UNARY = ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "abs", "square")
BINARY = {"add": "other", "sub": "other", "mul": "other", "div": "other", "pow": "exponent"}
# The other ops, with their arguments as torch.<name>(...) takes them; methods take `input` as `self`.
OPS = {
    **{name: (*X, (second, Grad(V))) for name, second in BINARY.items()},
    "matmul": (("input", Grad(M)), ("other", Grad(M))),
    "mm": (("input", Grad(M)), ("mat2", Grad(M))),
    "bmm": (("input", Grad((2, *M))), ("mat2", Grad((2, *M)))),
    "addmm": (("input", Grad(M)), ("mat1", Grad(M)), ("mat2", Grad(M))),
    "baddbmm": (("input", Grad((2, *M))), ("batch1", Grad((2, *M))), ("batch2", Grad((2, *M)))),
    "softmax": (*X, ("dim", 1)),
    "log_softmax": (*X, ("dim", 1)),
    "clamp": (*X, ("min", 0.6), ("max", 1.2)),
    "where": (("condition", CONDITION), *X, ("other", Grad(V))),
    "max": X,
    "min": X,
    "amax": (*X, ("dim", 1)),
    "amin": (*X, ("dim", 1)),
    "sum": X,
    "mean": X,
    "norm": X,
    "cumsum": (*X, ("dim", 1)),
    "cat": (("tensors", GradList(2, V)), ("dim", 0)),
    "stack": (("tensors", GradList(2, V)), ("dim", 0)),
    "index_select": (*X, ("dim", 1), ("index", INDEX)),
    "gather": (*X, ("dim", 1), ("index", torch.tensor([[0, 2], [1, 1]]))),
}
# Calls that save differently from the plain form, named like aten's overloads: `.dim` is the reduction
# given a dimension (it returns values and indices), `.Scalar` a Python number where a tensor may go.
OVERLOADS = {
    ("max", "dim"): (*X, ("dim", 1)),
    ("min", "dim"): (*X, ("dim", 1)),
    **{(name, "Scalar"): (*X, (second, 2.0)) for name, second in BINARY.items()},
}
FUNCTIONAL = {
    **{name: X for name in UNARY if hasattr(F, name)},
    "gelu": X,
    "silu": X,
    "elu": (*X, ("alpha", 1.0)),
    "leaky_relu": (*X, ("negative_slope", 0.01)),
    "hardtanh": (*X, ("min_val", -1.0), ("max_val", 1.0)),
    "relu6": X,
    "hardswish": X,
    "mish": X,
    "softplus": X,
    "softmax": (*X, ("dim", 1)),
    "log_softmax": (*X, ("dim", 1)),
    "normalize": (*X, ("p", 2.0), ("dim", 1)),
    "scaled_dot_product_attention": (("query", Grad(SEQ)), ("key", Grad(SEQ)), ("value", Grad(SEQ))),
    "mse_loss": (*X, ("target", Grad(V))),
    "cross_entropy": (*X, ("target", INDEX)),
    "linear": (*X, ("weight", Grad(M)), ("bias", Grad((3,)))),
    "conv1d": (("input", Grad(C)), ("weight", Grad((3, 2, 3))), ("bias", Grad((3,)))),
    "conv2d": (("input", Grad(IMG)), ("weight", Grad((3, 2, 3, 3))), ("bias", Grad((3,)))),
    "layer_norm": (*X, ("normalized_shape", (3,)), ("weight", Grad((3,))), ("bias", Grad((3,)))),
    "batch_norm": (
        *X,
        ("running_mean", torch.zeros(3)),
        ("running_var", torch.ones(3)),
        ("weight", Grad((3,))),
        ("bias", Grad((3,))),
        ("training", True),
    ),
    "group_norm": (("input", Grad(C)), ("num_groups", 1), ("weight", Grad((2,))), ("bias", Grad((2,)))),
    "dropout": (*X, ("p", 0.5), ("training", True)),
    "embedding": (("input", INDEX), ("weight", Grad(M))),
}
OPERATORS = {
    "+": (operator.add, operator.iadd),
    "-": (operator.sub, operator.isub),
    "*": (operator.mul, operator.imul),
    "/": (operator.truediv, operator.itruediv),
    "**": (operator.pow, operator.ipow),
    "@": (operator.matmul, operator.imatmul),
}


def _method(name: str) -> Callable:
    return lambda receiver, *args, **kwargs: getattr(receiver, name)(*args, **kwargs)


def _as_method(arguments) -> tuple:
    """The receiver is the function's `input`: `torch.where(c, x, y)` is `x.where(c, y)`."""
    names = [name for name, _ in arguments]
    at = names.index("input") if "input" in names else 0
    return (("self", arguments[at][1]), *(a for i, a in enumerate(arguments) if i != at))


def _torch_forms(name: str, arguments, overload: str = "") -> list[Case]:
    """torch.<name>, Tensor.<name> and their in-place `<name>_`, where each exists."""
    tail = f".{overload}" if overload else ""
    cases = []
    for suffix, inplace in (("", False), ("_", True)):
        if callable(function := getattr(torch, name + suffix, None)):
            cases.append(Case(f"torch.{name}{suffix}{tail}", function, arguments, inplace=inplace))
        if callable(getattr(torch.Tensor, name + suffix, None)):
            key, method = f"torch.Tensor.{name}{suffix}{tail}", _method(name + suffix)
            cases.append(Case(key, method, _as_method(arguments), inplace=inplace, receiver=True))
    return cases


def _takes_inplace(function) -> bool:
    try:
        return "inplace" in inspect.signature(function).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False


def _functional_forms(name: str, arguments) -> list[Case]:
    """F.<name>, F.<name>_ and F.<name>(..., inplace=True), where each exists."""
    function, key = getattr(F, name), f"torch.nn.functional.{name}"
    cases = [Case(key, function, arguments)]
    if callable(underscore := getattr(F, name + "_", None)):
        cases.append(Case(f"{key}_", underscore, arguments, inplace=True))
    if _takes_inplace(function):
        cases.append(Case(f"{key}.inplace", function, arguments, {"inplace": True}, inplace=True))
    return cases


def _operator_forms() -> list[Case]:
    """`a * b` and `a *= b`, also with a number on the right (`.Scalar`); `@` takes no number."""
    cases = []
    for symbol, (binary, augmented) in OPERATORS.items():
        shape = M if symbol == "@" else V
        rights = [("", Grad(shape))] + ([] if symbol == "@" else [(".Scalar", 2.0)])
        for tail, right in rights:
            arguments = (("self", Grad(shape)), ("other", right))
            cases.append(Case(symbol + tail, binary, arguments, receiver=True, named=False))
            cases.append(Case(f"{symbol}={tail}", augmented, arguments, inplace=True, receiver=True, named=False))
    return cases


def op_cases() -> list[Case]:
    cases = [c for name in UNARY for c in _torch_forms(name, X)]
    cases += [c for name, arguments in OPS.items() for c in _torch_forms(name, arguments)]
    cases += [c for (name, overload), arguments in OVERLOADS.items() for c in _torch_forms(name, arguments, overload)]
    cases += [c for name, arguments in FUNCTIONAL.items() for c in _functional_forms(name, arguments)]
    return cases + _operator_forms()


@dataclass(frozen=True)
class ModuleCase:
    """An nn module, called on `inputs` in training mode with all its parameters requiring grad."""

    name: str
    factory: Callable[[], nn.Module]
    inputs: tuple[tuple[str, object], ...] = X
    inplace: bool = False  # made with `inplace=True`: it writes its input, which must not be a grad leaf


def module_cases() -> list[ModuleCase]:
    def dim1(cls):
        return lambda: cls(dim=1)

    activations = (
        "ReLU",
        "ReLU6",
        "Sigmoid",
        "Tanh",
        "ELU",
        "GELU",
        "SiLU",
        "LeakyReLU",
        "Hardtanh",
        "Hardswish",
        "Mish",
        "Softplus",
        "PReLU",
    )
    inplace = [name for name in activations if _takes_inplace(getattr(nn, name))] + ["Dropout"]
    return [
        *(ModuleCase(name, getattr(nn, name)) for name in activations),
        *(ModuleCase(f"{name}.inplace", partial(getattr(nn, name), inplace=True), inplace=True) for name in inplace),
        ModuleCase("Softmax", dim1(nn.Softmax)),
        ModuleCase("LogSoftmax", dim1(nn.LogSoftmax)),
        ModuleCase("Linear", lambda: nn.Linear(3, 3)),
        ModuleCase("Bilinear", lambda: nn.Bilinear(3, 3, 2), (("input1", Grad(V)), ("input2", Grad(V)))),
        ModuleCase("Conv1d", lambda: nn.Conv1d(2, 3, 3), (("input", Grad(C)),)),
        ModuleCase("Conv2d", lambda: nn.Conv2d(2, 3, 3), (("input", Grad(IMG)),)),
        ModuleCase("ConvTranspose2d", lambda: nn.ConvTranspose2d(2, 3, 3), (("input", Grad(IMG)),)),
        ModuleCase("LayerNorm", lambda: nn.LayerNorm(3)),
        ModuleCase("BatchNorm1d", lambda: nn.BatchNorm1d(3)),
        ModuleCase("BatchNorm2d", lambda: nn.BatchNorm2d(2), (("input", Grad(IMG)),)),
        ModuleCase("GroupNorm", lambda: nn.GroupNorm(1, 2), (("input", Grad(C)),)),
        ModuleCase("Embedding", lambda: nn.Embedding(3, 3), (("input", INDEX),)),
        ModuleCase("Dropout", lambda: nn.Dropout(0.5)),
    ]


def _value(spec, requires_grad: bool, written: bool):
    """A fresh argument; a written one that requires grad is a non-leaf, as autograd demands."""
    if isinstance(spec, Grad):
        tensor = (torch.rand(spec.shape) + 0.5).requires_grad_(requires_grad)
        return tensor.clone() if written and requires_grad else tensor
    if isinstance(spec, GradList):
        return [_value(Grad(spec.shape), requires_grad, written) for _ in range(spec.count)]
    return spec.clone() if isinstance(spec, torch.Tensor) else spec


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


def _graph(roots) -> list:
    """The autograd nodes reachable from `roots`."""
    seen, stack = {}, [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(fn for fn, _ in node.next_functions if fn is not None)
    return list(seen.values())


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def _output_name(index: int) -> str:
    return OUTPUT if index == 0 else f"{OUTPUT}{index}"


def _saved_items(call: Call) -> frozenset[str]:
    """What the autograd nodes the call created keep."""
    _check_names(call.arguments)
    arguments = {name: {_storage(t) for t in _tensors(value)} for name, value in call.arguments.items()}
    produced = [_storage(t) for t in call.outputs]
    old = {id(node) for node in call.history}
    items = set()
    for node in _graph(t.grad_fn for t in call.outputs):
        if id(node) in old:
            continue
        for attribute in dir(node):
            if attribute.startswith("_saved_"):
                items.update(_classify(t, attribute, arguments, produced) for t in _tensors(getattr(node, attribute)))
    return frozenset(items)


def _check_names(names) -> None:
    clashes = [name for name in names if name.startswith(OUTPUT) or name == INTERNAL]
    if clashes:
        raise AssertionError(f"argument names {clashes} read as saved outputs or internals")


def _classify(saved: torch.Tensor, attribute: str, arguments: dict[str, set[int]], outputs: list[int]) -> str:
    storage = _storage(saved)
    as_argument = [name for name, storages in arguments.items() if storage in storages]
    as_output = [_output_name(i) for i, s in enumerate(outputs) if s == storage]
    # An in-place op's output is its first argument: the attribute says which of the two autograd kept.
    if as_output and (attribute.startswith("_saved_result") or not as_argument):
        return as_output[0]
    return as_argument[0] if as_argument else INTERNAL


def _outputs(result) -> tuple[torch.Tensor, ...]:
    return tuple(result) if isinstance(result, tuple) else (result,)


@dataclass
class Call:
    """What a call was given (for a module, also its parameters and buffers) and what it returned."""

    arguments: dict[str, object]
    outputs: tuple[torch.Tensor, ...]
    history: list  # the autograd nodes that existed before the call: those of its arguments


def _history(values) -> list:
    return _graph(t.grad_fn for value in values for t in _tensors(value))


def run_op(case: Case, requires_grad, by_keyword: bool = False) -> Call:
    """Call `case` with fresh arguments, those named in `requires_grad` requiring grad."""
    torch.manual_seed(0)
    first = case.arguments[0][0]
    values = {
        name: _value(spec, name in requires_grad, written=case.inplace and name == first)
        for name, spec in case.arguments
    }
    positional, history = list(values.values()), _history(values.values())
    if by_keyword:
        receiver = positional[:1] if case.receiver else []
        keywords = dict(list(values.items())[len(receiver) :])
        result = case.call(*receiver, **keywords, **case.keywords)
    else:
        result = case.call(*positional, **case.keywords)
    return Call(values, _outputs(result), history)


def run_module(case: ModuleCase, requires_grad) -> Call:
    torch.manual_seed(0)
    module = case.factory()
    for name, parameter in module.named_parameters():
        parameter.requires_grad_(name in requires_grad)
    values = {name: _value(spec, name in requires_grad, written=case.inplace) for name, spec in case.inputs}
    result = module(*values.values())
    state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    return Call({**values, **state}, _outputs(result), history=[])


def _saved(run, differentiable) -> tuple[str, dict[str, list[str]]]:
    """The grad_fn name and each saved item with the differentiable arguments whose gradient needs it.

    Run once with all of them requiring grad and once with each alone; autograd saves what the
    gradients that will be computed need, so the first run must keep exactly the union of the others.
    """

    def saved_items(requires_grad) -> frozenset[str]:
        return _saved_items(run(requires_grad))

    everything = saved_items(set(differentiable))
    alone = {name: saved_items({name}) for name in differentiable}
    if everything != frozenset().union(*alone.values()):
        raise AssertionError(f"saving is not the union over the arguments: {everything} vs {alone}")
    saved = {item: [name for name in differentiable if item in alone[name]] for item in sorted(everything)}
    return type(run(set(differentiable)).outputs[0].grad_fn).__name__, saved


def measure_op(case: Case) -> dict:
    grad_fn, saved = _saved(lambda grads: run_op(case, grads), case.differentiable)
    if case.named:  # the names recorded are the call's own: torch accepts them as keywords
        by_position = run_op(case, case.differentiable).outputs[0]
        by_keyword = run_op(case, case.differentiable, by_keyword=True).outputs[0]
        if not torch.equal(by_position, by_keyword):
            raise AssertionError(f"{case.key}: the arguments are not in the call's positional order")
    names = [name for name, _ in case.arguments]
    return {
        "grad_fn": grad_fn,
        "arguments": names[1:] if case.receiver else names,
        "differentiable": list(case.differentiable),
        "saved": saved,
    }


def measure_module(case: ModuleCase) -> dict:
    differentiable = [name for name, spec in case.inputs if isinstance(spec, Grad)]
    differentiable += [name for name, _ in case.factory().named_parameters()]
    grad_fn, saved = _saved(lambda grads: run_module(case, grads), differentiable)
    inputs = [name for name, _ in case.inputs]
    return {"grad_fn": grad_fn, "inputs": inputs, "differentiable": differentiable, "saved": saved}


def build_table() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # F.sigmoid and F.tanh are deprecated, and say so on each call
        ops = {case.key: measure_op(case) for case in op_cases()}
        modules = {case.name: measure_module(case) for case in module_cases()}
    return {
        "torch_version": str(torch.__version__).split("+")[0],
        "measured": (
            "CPU, float32; modules in training mode. `saved` maps each tensor the call's autograd nodes keep "
            "(an argument's name, `output`, `output1`, ... or `internal`) to the differentiable arguments "
            "whose gradient needs it: it is kept when any of them requires grad. `arguments` are the call's "
            "positional arguments in order; a method's or an operator's receiver is `self`, not one of them."
        ),
        "ops": ops,
        "modules": modules,
    }


def render(table: dict) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def diff_summary(old: dict, new: dict) -> list[str]:
    lines = [f"torch_version: {old.get('torch_version')!r} -> {new['torch_version']!r}"] * (
        old.get("torch_version") != new["torch_version"]
    )
    for section in ("ops", "modules"):
        before, after = old.get(section, {}), new[section]
        for key in sorted(before.keys() | after.keys()):
            if before.get(key) != after.get(key):
                lines.append(f"{section}[{key!r}]: {before.get(key)} -> {after.get(key)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file on disk is out of date")
    args = parser.parse_args(argv)
    table = build_table()
    if not args.check:
        OUT_PATH.write_text(render(table))
        return 0
    text = OUT_PATH.read_text() if OUT_PATH.exists() else "{}"
    if text != render(table):
        problems = diff_summary(json.loads(text), table) or ["formatting only"]
        print(f"{OUT_PATH} is out of date; rerun scripts/generate_saved_tensors.py", *problems, sep="\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
