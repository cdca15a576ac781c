"""The fast path (gpumem_lint/fast_path.py) reports exactly what the full parse reports.

Each source here is linted twice, once with every file parsed in full and once through
the fast path, and the diagnostics must be identical: the fixtures, every rule example,
snippets built around the links between scopes that the fast path must keep, and a
bounded sample of the installed torch package. bench/fast_path_equality.py runs the same
comparison over whole corpora.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from gpumem_lint import fast_path
from gpumem_lint.engine import decode_source, lint_source
from gpumem_lint.knowledge import knowledge
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.semantic.write_triggers import WRITES

ROOT = Path(__file__).resolve().parent.parent
ALIAS_RULES = [rule for rule in ALL_RULES if rule.scope_triggers is not None]

_FILLER = '''
def unrelated_{n}(items):
    """Nothing here writes a tensor."""
    total = 0
    for item in items:
        total = total + len(item)
    return total
'''

#: Snippets whose findings depend on a scope the fast path would hollow out if it ignored a link.
LINKS = {
    "inplace module built in __init__": '''
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU(inplace=True)

    def describe(self):
        return "block"

    def forward(self, x):
        y = self.act(x)
        return x + y
''',
    "function that writes its argument, called elsewhere": '''
import torch

def normalize(t):
    t.sub_(t.mean())
    return t

def describe(x):
    return str(x.shape)

def caller(batch):
    view = batch[0]
    normalize(batch)
    return view.sum(), batch
''',
    "aliased in-place import": '''
import torch
from torch import nn
from torch import relu_ as rectify

class Net(nn.Module):
    def forward(self, x):
        rectify(x)
        return x
''',
    "import inside a hollowed function": '''
def helper():
    import torch as th
    return th

def unrelated(x):
    return x

def forward_like(x):
    y = x.view(-1)
    x.add_(1)
    return y.sum()
''',
    "function defined under a module-level if": '''
import sys
import torch

if sys.platform:
    def scale(t):
        t.mul_(2)
        return t

def caller(x):
    v = x[0]
    scale(x)
    return v
''',
    "decorated method, class-level statements": '''
import torch
from torch import nn

class Model(nn.Module):
    """A model."""
    limit = torch.zeros(3)

    @staticmethod
    def build():
        return Model()

    @torch.no_grad()
    def update(self, x):
        x.add_(1)

    def forward(self, x):
        h = x[:, 0]
        x.mul_(2)
        return h
''',
    "module-level statements": '''
import torch
weights = torch.ones(4)
view = weights[:2]
weights.add_(1)
print(view)

def unrelated(x):
    return x
''',
}


def _both(text: str, rules) -> tuple[list, list]:
    fast_path.enabled = False
    try:
        full = lint_source(text, "example.py", rules)
    finally:
        fast_path.enabled = True
    return full, lint_source(text, "example.py", rules)


def _sources() -> list:
    """Fixtures and link snippets under the rules the fast path serves; rule examples under every rule."""
    files = sorted((ROOT / "fixtures").rglob("*.py"))
    params = [pytest.param(path.read_text(), ALIAS_RULES, id=str(path.relative_to(ROOT))) for path in files]
    params += [pytest.param(code, ALIAS_RULES, id=name) for name, code in LINKS.items()]
    params += [
        pytest.param(example if isinstance(example, str) else example.code, ALL_RULES, id=f"{rule.code}-{index}")
        for rule in ALL_RULES
        for index, example in enumerate((*rule.VALID, *rule.INVALID))
    ]
    return params


@pytest.mark.parametrize(("text", "rules"), _sources())
def test_fast_path_reports_what_the_full_parse_reports(text, rules):
    full, fast = _both(text, rules)
    assert fast == full


@pytest.mark.parametrize("name", list(LINKS))
def test_linked_scopes_survive_among_hollowed_ones(name):
    """With unrelated functions around it, the snippet is reduced, and still reports the same."""
    fillers = "".join(_FILLER.format(n=n) for n in range(3))
    text = LINKS[name] + fillers
    reduction = fast_path.reduce_source(text, ALIAS_RULES)
    assert reduction is not None
    assert "unrelated_0" not in reduction.text or "def unrelated_0():" in reduction.text
    full, fast = _both(text, ALIAS_RULES)
    assert full, "each link snippet holds a finding"
    assert fast == full


def test_positions_map_back_through_windows_line_ends():
    text = (LINKS["function that writes its argument, called elsewhere"] + _FILLER.format(n=0)).replace("\n", "\r\n")
    full, fast = _both(_FILLER.format(n=1).replace("\n", "\r\n") + text, ALIAS_RULES)
    assert full
    assert fast == full


def test_a_rule_without_scope_triggers_gets_the_whole_module():
    whole = [rule for rule in ALL_RULES if rule.scope_triggers is None and rule.triggers]
    assert fast_path.reduce_source(LINKS["module-level statements"], [*ALIAS_RULES, *whole[:1]]) is None


def test_every_write_making_name_matches_the_write_triggers():
    k = knowledge()
    names = (
        k.data_write_methods | k.inplace_functions | k.init_functions | k.functional_inplace_underscore | k.load_methods
    )
    for name in sorted(names):
        for text in (f"x.{name}(y)", f"{name}(x)"):
            assert any(pattern.search(text) for pattern in WRITES), text
    for text in ("x += 1", "x[i] = 0", "a, x[i] = b, c", "x[i], a = b, c", "for x[i] in y:", "p.data = t",
                 "torch.add(a, b, out=c)", "F.relu(x, inplace=True)", "F.batch_norm(x, m, v, training=True)",
                 "np.copyto(a, b)", "opt.step()", "train_one_epoch(model)", "ema.update(model)"):
        assert any(pattern.search("\n" + text) for pattern in WRITES), text


def _torch_sample() -> list:
    torch_dir = Path(importlib.util.find_spec("torch").origin).parent
    files = ("optim/sgd.py", "nn/modules/activation.py", "nn/utils/clip_grad.py")
    return [pytest.param(torch_dir / file, id=file) for file in files]


@pytest.mark.parametrize("path", _torch_sample())
def test_fast_path_on_real_torch_code(path):
    full, fast = _both(decode_source(path.read_bytes()), ALIAS_RULES)
    assert fast == full
