"""The checked-in op table must match what the installed torch's schemas say."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OPS_JSON = ROOT / "gpumem_lint" / "knowledge" / "ops.json"
GENERATOR = ROOT / "scripts" / "generate_op_tables.py"


@pytest.fixture(scope="module")
def ops() -> dict:
    return json.loads(OPS_JSON.read_text())


def test_table_matches_installed_torch(ops):
    pytest.importorskip("torch")
    # scripts/ is not a package, so load the generator from its path.
    spec = importlib.util.spec_from_file_location("generate_op_tables", GENERATOR)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    fresh = generator.build_tables()
    assert fresh == ops, "ops.json is stale; run `python scripts/generate_op_tables.py`:\n" + "\n".join(
        generator.diff_summary(ops, fresh)
    )


def test_lists_are_sorted_and_unique(ops):
    for key, value in ops.items():
        if key != "torch_version":
            assert value == sorted(set(value)), key


@pytest.mark.parametrize(
    "key, name",
    [
        ("inplace_methods", "add_"),
        ("inplace_methods", "copy_"),
        ("inplace_view_methods", "transpose_"),
        ("inplace_functions", "relu_"),
        ("out_functions", "add"),
        *[("view_methods", n) for n in ("view", "narrow", "select", "transpose", "diagonal", "unsqueeze", "detach")],
        *[("multi_view_methods", n) for n in ("unbind", "split", "chunk")],
        ("expand_methods", "expand"),
        ("functional_inplace_kwarg", "relu"),
        ("functional_inplace_underscore", "relu_"),
        ("module_inplace_kwarg", "ReLU"),
        ("init_functions", "zeros_"),
    ],
)
def test_known_entries(ops, key, name):
    assert name in ops[key]


@pytest.mark.parametrize("name", ["reshape", "reshape_as", "flatten", "contiguous", "to"])
def test_may_alias_ops_are_not_views(ops, name):
    # These copy when they cannot alias; the analyzer's hand table owns them.
    assert name not in ops["view_methods"]


def test_metadata_ops_are_not_data_writes(ops):
    assert "transpose_" not in ops["inplace_methods"]
    assert "retain_grad" not in ops["inplace_methods"]
