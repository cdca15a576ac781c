"""What an optimizer kept on `self` steps (class_facts.py `Held.OPTIMIZER`)."""

import libcst as cst

from gpumem_lint.semantic.class_facts import Held
from gpumem_lint.semantic.scopes import ScopeCollector


def _attributes(source: str, cls: str) -> dict:
    module = cst.parse_module(source)
    collector = ScopeCollector(module)
    collector.walk(module)
    classes = collector.finish()[0].classes
    return {name: classes.attribute(cls, name) for name in ("vae", "opt", "a", "b", "c")}


def test_an_optimizer_over_a_module_attribute_steps_that_attribute():
    facts = _attributes(
        """
import torch
class Solver:
    def __init__(self):
        self.vae = torch.nn.Linear(2, 2)
        self.opt = torch.optim.Adam([{"params": self.vae.parameters(), "lr": 1e-3}])
""",
        "Solver",
    )
    assert facts["opt"].held is Held.OPTIMIZER
    assert facts["opt"].steps == ("self.vae",)


def test_optimizers_given_each_other_or_unknown_values_are_unknown():
    facts = _attributes(
        """
import torch
class Solver:
    def __init__(self, model):
        self.a = torch.optim.Adam(self.b.parameters())
        self.b = torch.optim.Adam(self.a.parameters())
        self.c = torch.optim.SGD(self.c.parameters(), lr=1)
        self.vae = model
        self.opt = torch.optim.SGD(self.vae.parameters(), lr=1)
""",
        "Solver",
    )
    assert facts["a"] is None and facts["b"] is None and facts["c"] is None  # no cycle to follow
    assert facts["opt"] is None  # `self.vae` holds what the caller passed
