"""The checked-in table of `torch.nn` modules must match what the installed torch builds."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "gpumem_lint" / "knowledge" / "modules.json"
GENERATOR = ROOT / "scripts" / "generate_module_table.py"


def test_table_matches_installed_torch():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("generate_module_table", GENERATOR)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.build_table() == json.loads(TABLE.read_text()), (
        "modules.json is stale; run `python scripts/generate_module_table.py`"
    )


@pytest.mark.parametrize(
    ("module", "parameters", "buffers"),
    [
        ("Linear", {"weight", "bias"}, set()),
        ("Conv2d", {"weight", "bias"}, set()),
        ("BatchNorm2d", {"weight", "bias"}, {"running_mean", "running_var", "num_batches_tracked"}),
        ("InstanceNorm2d", set(), set()),  # affine=False by default
        ("ReLU", set(), set()),
    ],
)
def test_knowledge_reads_the_table(module, parameters, buffers):
    from gpumem_lint.knowledge import knowledge

    k = knowledge()
    assert k.module_parameters[f"torch.nn.{module}"] == parameters
    assert k.module_buffers[f"torch.nn.{module}"] == buffers
