"""What a function returns, as its callers see it (gpumem_lint/semantic/summaries.py)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gpumem_lint.semantic.model import SemanticModel
from gpumem_lint.semantic.summaries import Returns
from gpumem_lint.semantic.values import AliasKind, Grad

_HEADER = "import torch\nimport torch.nn as nn\n\n"


def _facts(source: str) -> dict[str, object]:
    model = SemanticModel.build(cst.parse_module(_HEADER + textwrap.dedent(source)))
    return {facts.scope.name: facts for facts in model.facts}


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        ("def f(n):\n    return torch.zeros(1, 4).expand(n, 4)\n", Returns(AliasKind.EXPAND)),
        ("def f(x, n):\n    return x.chunk(n)\n", Returns(AliasKind.MULTI_VIEW, "x", 0)),
        ("def f(scale, x):\n    return x.split(2)\n", Returns(AliasKind.MULTI_VIEW, "x", 1)),
        ("def f(n):\n    return nn.Parameter(torch.randn(n))\n", Returns(AliasKind.OWN)),
        ("def f(n):\n    return torch.randn(n, requires_grad=True)\n", Returns(AliasKind.OWN)),
        # Host memory (F49): a `.cpu()` copy, its `.numpy()`, a CPU load; not where one path returns the argument.
        ("def f(t):\n    return t.detach().cpu().numpy()\n", Returns(AliasKind.OWN, host=True)),
        ("def f(path):\n    return torch.load(path, map_location='cpu')\n", Returns(AliasKind.OWN, host=True)),
        ("def f(t, keep):\n    if keep:\n        return t\n    return t.cpu()\n", None),
        # The argument itself, written or not: the caller's result is the tensor it passed.
        ("def f(x):\n    return x\n", Returns(AliasKind.OWN, "x", 0)),
        ("def f(n, x):\n    x[2:5] += 1\n    return x\n", Returns(AliasKind.OWN, "x", 1)),
        # Not summarised: returns that disagree, a plain tensor, a generator.
        ("def f(x, copy):\n    if copy:\n        return x.clone()\n    return x\n", None),
        (
            "def f(n, shared):\n    if shared:\n        return torch.zeros(1).expand(n)\n    return torch.zeros(n)\n",
            None,
        ),
        ("def f(n):\n    return torch.zeros(n)\n", None),
        ("def f(x):\n    yield x\n    return x.chunk(2)\n", None),
        ("def f(xs):\n    return [x.expand(2) for x in xs]\n", None),
    ],
)
def test_what_a_function_returns(function, expected):
    assert _facts(function)["f"].returns == expected


def _writer_kinds(source: str, scope: str) -> list[tuple[AliasKind, Grad]]:
    return [(write.writer.kind, write.writer.grad) for write in _facts(source)[scope].writes]


def test_a_call_gives_what_the_function_returns():
    source = """
    def make_mask(n):
        return torch.zeros(1, 4).expand(n, 4)

    def fill(n):
        mask = make_mask(n)
        mask.add_(1)
    """
    assert [kind for kind, _ in _writer_kinds(source, "fill")] == [AliasKind.EXPAND]


def test_an_alias_of_a_parameter_is_made_of_what_the_caller_passes():
    source = """
    def heads(scale, x):
        return x.chunk(3, dim=-1)

    def step(model, x):
        q, k, v = heads(0.5, x=model(x))
        q *= 2
        loss = (q * k * v).sum()
        loss.backward()
    """
    assert _writer_kinds(source, "step") == [(AliasKind.MULTI_VIEW, Grad.MAY)]  # `model(x)` while training


def test_own_methods_are_summarised_through_self_and_other_objects_are_not():
    source = """
    class Attention(nn.Module):
        def heads(self, x):
            return x.chunk(3, dim=-1)

        def forward(self, x):
            q, k, v = self.heads(x)
            q *= 0.5
            a, b, c = other.heads(x)
            a.mul_(0.5)
            return q, a
    """
    kinds = [kind for kind, _ in _writer_kinds(source, "forward")]
    assert kinds == [AliasKind.MULTI_VIEW, AliasKind.OWN]
