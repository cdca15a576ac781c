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
from gpumem_lint.engine import lint_source
from gpumem_lint.knowledge import knowledge
from gpumem_lint.rules import ALL_RULES
from gpumem_lint.source import decode_source

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
    "inplace module built in __init__": """
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
""",
    "Sequential led by an in-place layer, built from a list, used by another class": """
import torch.nn as nn

class Head(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.ReLU(inplace=True))
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head([8, 2])

    def forward(self, emb):
        logits = self.head(emb)
        return logits, emb.norm()
""",
    "function that returns an expand view, written by its caller": """
import torch

def make_mask(n):
    return torch.zeros(1, 4).expand(n, 4)

def fill(n):
    mask = make_mask(n)
    mask.add_(1)
    return mask
""",
    "method that returns chunk outputs, written by forward": """
import torch
from torch import nn

class Attention(nn.Module):
    def heads(self, x):
        return self.qkv(x).chunk(3, dim=-1)

    def forward(self, x):
        q, k, v = self.heads(x)
        q *= 0.5
        return q @ k.transpose(-2, -1) @ v
""",
    "function that writes its argument, called elsewhere": """
import torch

def normalize(t):
    t.sub_(t.mean())
    return t.std()

def describe(x):
    return str(x.shape)

def caller(batch):
    view = batch[0]
    normalize(batch)
    return view.sum(), batch
""",
    "aliased in-place import": """
import torch
from torch import nn
from torch import relu_ as rectify

class Net(nn.Module):
    def forward(self, x):
        rectify(x)
        return x * 2
""",
    "import inside a hollowed function": """
def helper():
    import torch as th
    return th

def unrelated(x):
    return x

def forward_like(x):
    y = x.view(-1)
    x.add_(1)
    return y.sum()
""",
    "function defined under a module-level if": """
import sys
import torch

if sys.platform:
    def scale(t):
        t.mul_(2)
        return t.sum()

def caller(x):
    v = x[0]
    scale(x)
    return v
""",
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
    "aliased empty_cache in a training method": """
import torch
from torch.cuda import empty_cache as release

class Trainer:
    def describe(self):
        return "trainer"

    def fit(self, loader):
        for batch in loader:
            loss = self.model(batch).mean()
            loss.backward()
            self.optimizer.step()
            release()
""",
    "an Embedding made with max_norm in __init__, called in forward": """
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(3, 5, max_norm=1.0)
        self.W = nn.Parameter(torch.randn(7, 5))

    def forward(self, idx):
        a = self.embedding.weight @ self.W.t()
        b = self.embedding(idx) @ self.W.t()
        return (a.unsqueeze(0) + b.unsqueeze(1)).sum()


def train(scorer, idx):
    scorer(idx).backward()
""",
    "module-level statements": """
import torch
weights = torch.ones(4)
view = weights[:2]
weights.add_(1)
print(view)

def unrelated(x):
    return x
""",
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


def _kept(statement: str, rules=ALIAS_RULES) -> bool:
    """Whether the fast path keeps a function made of this statement (next to one it hollows)."""
    text = f"def candidate(x, y, model, opt):\n    {statement}\n" + _FILLER.format(n=0)
    reduction = fast_path.reduce_source(text, rules)
    return reduction is not None and statement in reduction.text


def test_every_write_making_name_matches_the_write_triggers():
    k = knowledge()
    names = (
        k.data_write_methods | k.inplace_functions | k.init_functions | k.functional_inplace_underscore | k.load_methods
    )
    for name in sorted(names):
        for statement in (f"x.{name}(y)", f"{name}(x)"):
            assert _kept(statement), statement


@pytest.mark.parametrize(
    "statement",
    [
        "x += 1",
        "x[i] = 0",
        "x[0][1] = 0",
        "x.view(-1)[0] = 1",
        "x[:, 0]: int = 0",
        "a, x[i] = b, c",
        "x[i], a = b, c",
        "(a, x[i]) = b",
        "for x[i] in y: pass",
        "with f() as x[i]: pass",
        "p.data = t",
        "z = [0 for x[0] in y]",
        "torch.add(a, b, out=c)",
        "F.relu(x, inplace=True)",
        "F.batch_norm(x, m, v, training=True)",
        "np.copyto(a, b)",
        "F.embedding(i, w, max_norm=1.0)",
        "model.load_state_dict(y)",
        "opt = SGD(model.parameters()); opt.step()",
        "sd = model.state_dict(); train_one_epoch(model)",
    ],
)
def test_every_write_form_keeps_its_scope(statement):
    assert _kept(statement)


@pytest.mark.parametrize(
    "statement", ["return x + y", "y = x.clone()", "def f(a: Optional[int] = None): pass", "opt.step()"]
)
def test_scopes_without_a_write_form_are_hollowed(statement):
    # The alias rules (GML1xx); GML406 keeps the scopes that run a training step, for their loops.
    assert not _kept(statement, [rule for rule in ALIAS_RULES if rule.code.startswith("GML1")])


def test_scopes_running_a_training_step_are_kept_for_empty_cache_in_a_helper():
    assert _kept("opt.step()", [rule for rule in ALIAS_RULES if rule.code == "GML406"])


def _torch_sample() -> list:
    torch_dir = Path(importlib.util.find_spec("torch").origin).parent
    files = ("optim/sgd.py", "nn/modules/activation.py", "nn/utils/clip_grad.py")
    return [pytest.param(torch_dir / file, id=file) for file in files]


@pytest.mark.parametrize("path", _torch_sample())
def test_fast_path_on_real_torch_code(path):
    full, fast = _both(decode_source(path.read_bytes()), ALIAS_RULES)
    assert fast == full
