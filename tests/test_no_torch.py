"""The static check never imports torch: it must work where torch cannot be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# A meta-path hook that makes `import torch` (and numpy) fail, then runs the CLI.
_RUNNER = textwrap.dedent(
    """
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "numpy"):
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, Block())
    from gpumem_lint.cli import main
    sys.argv = ["gpumem-lint", "--output-format", "concise", *sys.argv[1:]]
    main()
    """
)


def test_check_runs_with_torch_unimportable(tmp_path):
    source = tmp_path / "train.py"
    source.write_text(
        "import torch\n"
        "def smoothed(updates, decay):\n"
        "    hidden = torch.zeros_like(updates[0])\n"
        "    prev = hidden.detach()\n"
        "    for u in updates:\n"
        "        hidden.mul_(decay).add_(u)\n"
        "    return hidden - prev\n"
    )
    result = subprocess.run([sys.executable, "-c", _RUNNER, str(source)], capture_output=True, text=True, check=False)
    assert result.returncode == 1, result.stderr
    assert "train.py:6:9: GML103" in result.stdout
    assert "blocked" not in result.stderr


def test_linted_code_is_never_executed(tmp_path):
    marker = tmp_path / "executed"
    source = tmp_path / "side_effect.py"
    source.write_text(f"import torch\nopen({str(marker)!r}, 'w').write('ran')\n")
    result = subprocess.run([sys.executable, "-c", _RUNNER, str(source)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not marker.exists()
