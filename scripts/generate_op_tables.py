"""Generate gpumem_lint/knowledge/ops.json from torch's own operator schemas.

The analyzer must not import torch (it lints code on machines without it, and
importing torch takes seconds), yet it needs to know which calls write or alias
a tensor.  That knowledge lives in the aten schema annotations (``Tensor(a!)``
is written, ``Tensor(a)`` returned is an alias), so we read it from there once
and check the result in.  tests/test_op_tables.py regenerates the table when
torch is installed and fails on any difference, so a torch upgrade that adds
or changes ops shows up as a test failure instead of silent drift.

Usage: python scripts/generate_op_tables.py [--check]
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections import defaultdict
from pathlib import Path

import torch

OUT_PATH = Path(__file__).resolve().parents[1] / "gpumem_lint" / "knowledge" / "ops.json"

# The schemas write "may alias" exactly like "always aliases": these return
# their input unchanged when there is nothing to do and a fresh copy otherwise
# (docs: "Tensor Views").  Listing them as views would make every reshape look
# like shared memory, so they are left to the analyzer's hand table.
MAY_ALIAS = frozenset(
    {
        "as_tensor",
        "coalesce",
        "contiguous",
        "cpu",
        "cuda",
        "flatten",
        "pin_memory",
        "ravel",
        "reshape",
        "reshape_as",
        "resolve_conj",
        "resolve_neg",
        "to",
    }
)

# A schema says *that* an op aliases, never that the view overlaps itself
# (stride 0), so the broadcasting views are named here and kept only where the
# schema confirms they are views at all.
BROADCAST_VIEWS = frozenset({"expand", "expand_as", "broadcast_to"})
# broadcast_tensors returns expanded views of its inputs, but its schema
# (Tensor[] tensors) -> Tensor[] carries no alias annotation, so no schema
# evidence can find it.
EXTRA_EXPAND = frozenset({"broadcast_tensors"})


def _is_tensor(arg) -> bool:
    return isinstance(arg.type, torch.TensorType)


def _writes_self(schema) -> bool:
    # For every public op, self is also the first Tensor argument, so this
    # covers torch.relu_(x) as well as x.relu_().  The Tensor check drops the
    # TorchScript list builtins that share the aten namespace (aten::sort.str).
    return any(
        a.name == "self" and _is_tensor(a) and a.alias_info is not None and a.alias_info.is_write
        for a in schema.arguments
    )


def _writes_out(schema) -> bool:
    return any(a.is_out for a in schema.arguments)


def _returns_view(schema) -> bool:
    """One Tensor return in the same (read-only) alias set as a Tensor input."""
    if len(schema.returns) != 1 or not _is_tensor(schema.returns[0]):
        return False
    ret = schema.returns[0].alias_info
    if ret is None or ret.is_write:
        return False
    return any(
        _is_tensor(a) and a.alias_info is not None and a.alias_info.before_set & ret.before_set
        for a in schema.arguments
    )


def _returns_views(schema) -> bool:
    """A Tensor[] return whose elements alias an input: ``Tensor(a -> *) self``.

    The Python binding does not expose the element annotation of
    ``Tensor(a)[]``, but the input side says the same thing: its alias set
    flows into the wildcard set that the returned list's elements belong to.
    """
    if len(schema.returns) != 1 or str(schema.returns[0].type) != "List[Tensor]":
        return False
    return any(
        _is_tensor(a) and a.alias_info is not None and not a.alias_info.is_write and "*" in a.alias_info.after_set
        for a in schema.arguments
    )


def _has_inplace_param(fn) -> bool:
    try:
        return "inplace" in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False


def _public(namespace, names) -> list[str]:
    # Private names are internal plumbing that user code rarely calls and that
    # churn between torch releases; dunders are augmented assignment, which the
    # analyzer handles itself.  On Tensor any attribute counts, since properties
    # such as x.real and x.mT are views too; elsewhere only callables, which
    # drops modules such as torch.cpu and torch.cuda.
    def present(n):
        if namespace is torch.Tensor:
            return hasattr(namespace, n)
        return callable(getattr(namespace, n, None))

    return sorted(n for n in names if not n.startswith("_") and present(n))


#: Augmented assignment and the in-place method Python calls for it; without that method
#: (`Tensor.__imatmul__`), `x @= y` rebinds x to a new tensor.
AUGMENTED = {
    "+=": "__iadd__",
    "-=": "__isub__",
    "*=": "__imul__",
    "/=": "__itruediv__",
    "//=": "__ifloordiv__",
    "%=": "__imod__",
    "**=": "__ipow__",
    "&=": "__iand__",
    "|=": "__ior__",
    "^=": "__ixor__",
    "<<=": "__ilshift__",
    ">>=": "__irshift__",
    "@=": "__imatmul__",
}


def build_tables() -> dict:
    # One entry per op name: overloads (add_.Tensor, add_.Scalar) are the
    # same Python name, and a name qualifies if any of its overloads does.
    by_kind: dict[str, set[str]] = defaultdict(set)
    for schema in torch._C._jit_get_all_schemas():
        namespace, _, name = schema.name.partition("::")
        if namespace != "aten":
            continue
        if _writes_self(schema):
            tags = getattr(getattr(torch.ops.aten, name), schema.overload_name or "default").tags
            # inplace_view ops (transpose_, set_, ...) rewrite metadata, not
            # data; untagged writers (retain_grad, record_stream) only mark
            # self for autograd or the caching allocator.
            if torch.Tag.inplace_view in tags:
                by_kind["inplace_view"].add(name)
            elif torch.Tag.inplace in tags:
                by_kind["inplace"].add(name)
        if _writes_out(schema):
            by_kind["out"].add(name)
        if _returns_view(schema) and not schema.is_mutable:
            by_kind["view"].add(name)
        if _returns_views(schema) and not schema.is_mutable:
            by_kind["multi_view"].add(name)

    views = by_kind["view"] - MAY_ALIAS
    # A name with both kinds of overload (none today) counts as a metadata op.
    inplace = by_kind["inplace"] - by_kind["inplace_view"]
    view_methods = _public(torch.Tensor, views)
    view_functions = _public(torch, views)
    F, nn = torch.nn.functional, torch.nn
    return {
        "torch_version": str(torch.__version__).split("+")[0],
        "inplace_methods": _public(torch.Tensor, inplace),
        # In-place methods with an out-of-place twin (`mul_` -> `mul`; `zero_` has none): what a fix may call.
        "inplace_methods_with_twin": [n for n in _public(torch.Tensor, inplace) if hasattr(torch.Tensor, n[:-1])],
        "inplace_view_methods": _public(torch.Tensor, by_kind["inplace_view"]),
        # Those whose out-of-place twin is a view op (`squeeze_` -> `squeeze`): the new layout, the tensor
        # unchanged (`resize_` has none: `Tensor.resize` is a deprecated Python function, not an op).
        "inplace_view_methods_with_twin": [
            n for n in _public(torch.Tensor, by_kind["inplace_view"]) if n[:-1] in by_kind["view"]
        ],
        "inplace_functions": _public(torch, inplace),
        "inplace_functions_with_twin": [n for n in _public(torch, inplace) if callable(getattr(torch, n[:-1], None))],
        "inplace_view_functions": _public(torch, by_kind["inplace_view"]),
        "out_functions": _public(torch, by_kind["out"]),
        # Of those, the ones `torch.Tensor` has as methods: `x.sigmoid()` is evidence of a tensor, `rng.randint()` is not.
        "out_methods": _public(torch.Tensor, by_kind["out"]),
        "view_methods": view_methods,
        "view_functions": view_functions,
        "multi_view_methods": _public(torch.Tensor, by_kind["multi_view"]),
        "multi_view_functions": _public(torch, by_kind["multi_view"]),
        "expand_methods": sorted(BROADCAST_VIEWS.intersection(view_methods)),
        "expand_functions": sorted(BROADCAST_VIEWS.intersection(view_functions) | set(_public(torch, EXTRA_EXPAND))),
        "functional_inplace_kwarg": sorted(n for n in _public(F, dir(F)) if _has_inplace_param(getattr(F, n))),
        "functional_inplace_underscore": _public(F, [n for n in dir(F) if n.endswith("_")]),
        "module_inplace_kwarg": sorted(
            n
            for n in _public(nn, dir(nn))
            if inspect.isclass(c := getattr(nn, n)) and issubclass(c, nn.Module) and _has_inplace_param(c.__init__)
        ),
        "init_functions": _public(nn.init, [n for n in dir(nn.init) if n.endswith("_")]),
        "inplace_operators": sorted(symbol for symbol, method in AUGMENTED.items() if hasattr(torch.Tensor, method)),
    }


def render(tables: dict) -> str:
    return json.dumps(tables, indent=1, sort_keys=True) + "\n"


def diff_summary(old: dict, new: dict) -> list[str]:
    lines = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if isinstance(before, list) and isinstance(after, list):
            added, removed = sorted(set(after) - set(before)), sorted(set(before) - set(after))
            lines.append(f"{key}: +{added} -{removed}")
        else:
            lines.append(f"{key}: {before!r} -> {after!r}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file on disk is out of date")
    args = parser.parse_args(argv)
    tables = build_tables()
    if not args.check:
        OUT_PATH.parent.mkdir(parents=True, exist_ok=True)
        OUT_PATH.write_text(render(tables))
        return 0
    text = OUT_PATH.read_text() if OUT_PATH.exists() else "{}"
    if text != render(tables):
        problems = diff_summary(json.loads(text), tables) or ["formatting only"]
        print(f"{OUT_PATH} is out of date; rerun scripts/generate_op_tables.py", *problems, sep="\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
