"""The GML3xx file pre-filter: every environment write the rules can report passes it, and a file
that only reads the environment does not (it then skips the program-order model)."""

from __future__ import annotations

import pytest

from gpumem_lint.rules._env_lockin import ENV_WRITE


@pytest.mark.parametrize(
    "source",
    [
        'os.environ["CUDA_VISIBLE_DEVICES"] = "0"',
        "os.environ[ 'OMP_NUM_THREADS' ]='4'",
        'environ["PATH"] += ":/opt/bin"',
        "os.environ[KEY] = value",
        'os.environ[\n    "PYTORCH_CUDA_ALLOC_CONF"\n] = "expandable_segments:True"',
        'os.environ.setdefault("NCCL_DEBUG", "INFO")',
        'os.environ.update({"MASTER_ADDR": "localhost"})',
        "os.environ . update(MASTER_PORT='29500')",
        'os.environ.__setitem__("A", "1")',
        'os.putenv("CUDA_VISIBLE_DEVICES", "1")',
        'from os import environ as env\nenv["A"] = "1"',
    ],
)
def test_every_reported_write_form_passes(source):
    assert ENV_WRITE.search(source)


@pytest.mark.parametrize(
    "source",
    [
        'rank = int(os.environ["LOCAL_RANK"])',
        'if os.environ["A"] == "1": pass',
        'debug = os.environ.get("DEBUG", "0")',
        '"CUDA_VISIBLE_DEVICES" in os.environ',
        "env = dict(os.environ)",
        "from os import environ",
    ],
)
def test_reads_do_not(source):
    assert not ENV_WRITE.search(source)
