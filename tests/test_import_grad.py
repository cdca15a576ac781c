"""Grad mode switched off by the packages a file belongs to (semantic/import_grad.py).

Importing `server.models.moe` runs `server/__init__.py` and `server/models/__init__.py` first: a
top-level `torch.set_grad_enabled(False)` there turns autograd off for the process, so the autograd
rules have nothing to report in the package's modules. Each look-alike below keeps its finding.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import RULES_BY_CODE

_MODULE = """
import torch
from torch import nn


class Router(nn.Module):
    def __init__(self, dim, experts):
        super().__init__()
        self.gate = nn.Linear(dim, experts)

    def forward(self, x, temperature):
        probs = torch.softmax(self.gate(x), dim=-1)
        probs.div_(temperature)
        return probs
"""

_RULES = [RULES_BY_CODE["GML109"]]


def _lint(root: Path, init: str | None, module: str = _MODULE) -> list[str]:
    package = root / "server" / "models"
    package.mkdir(parents=True)
    (root / "server" / "__init__.py").write_text("")
    if init is not None:
        (package / "__init__.py").write_text(init)
    path = package / "moe.py"
    path.write_text(module)
    dependencies: set[Path] = set()
    found = [d.code for d in lint_source(module, str(path), _RULES, dependencies)]
    return found, dependencies


def test_a_package_that_disables_grad_at_import_silences_its_modules(tmp_path: Path) -> None:
    found, dependencies = _lint(tmp_path, "import torch\n\ntorch.set_grad_enabled(False)\n")
    assert found == []
    assert tmp_path / "server" / "models" / "__init__.py" in {d.resolve() for d in dependencies}


@pytest.mark.parametrize(
    "init",
    [
        None,  # not a package: nothing runs first
        "import torch\n",
        "import torch\n\nif __name__ == '__main__':\n    torch.set_grad_enabled(False)\n",
        "import torch\n\ndef serve():\n    torch.set_grad_enabled(False)\n",
        "import torch\n\ntorch.set_grad_enabled(True)\n",
    ],
)
def test_look_alikes_keep_the_finding(tmp_path: Path, init: str | None) -> None:
    assert _lint(tmp_path, init)[0] == ["GML109"]


def test_a_module_that_turns_grad_back_on_keeps_the_finding(tmp_path: Path) -> None:
    module = _MODULE.replace("    def forward(", "    @torch.enable_grad()\n    def forward(")
    assert _lint(tmp_path, "import torch\ntorch.set_grad_enabled(False)\n", module)[0] == ["GML109"]
