"""What every write the alias analysis records shows in its scope's source.

A scope that shows none of `WRITES` holds no write (flow.py and calls.py, every
`_write` call site), so no GML1xx finding can lie in it: those rules declare
`scope_triggers = WRITES` and the engine's fast path (fast_path.py) hollows such
scopes out before parsing. The triggers over-approximate on purpose (`x[i] = v`
on a list counts); missing a form loses findings, so tests/test_fast_path.py checks
that every write-making name in the knowledge tables matches, and that the fast
path and the full parse agree.

Each pattern starts with a literal or a small character class, so that the regex
engine skips ahead between candidates.

Writes through another scope are not this module's business: calling a function
that writes its argument, and a module made `inplace` in `__init__` and called in
`forward`, are links between scopes that the fast path keeps (see fast_path.py).
"""

from __future__ import annotations

import re

from gpumem_lint.fast_path import STORES, AllOf, Trigger

#: Calls that train, step or update the modules of their scope (calls.py `_TRAINING_CALL`, optimizer
#: steps) write only modules the scope reached through one of `_MODULE_STATE` (`module_storages`).
_TRAINING_CALL = re.compile(
    r"(?:[Tt](?i:rain)|[Ff](?i:it)|[Ee](?i:poch)|[Ss](?i:tep)|[Oo](?i:ptimi[sz]e)|[Ll](?i:earn)|[Uu](?i:pdate))\w*\s*\("
)
_MODULE_STATE = re.compile(r"state_dict|parameters|buffers")

WRITES: tuple[Trigger, ...] = (
    STORES,  # x[i] = v, x += y, x[i] *= 2, a, x[i] = ..., for x[i] in ..., with f() as x[i]
    re.compile(r"for\b[^\n]*\][^\n]*\bin\b"),  # [... for x[i] in ...]
    re.compile(r"\.data\b"),  # p.data = t, p.data.add_(...)
    re.compile(r"_(?<=[^\W_]_)\s*\("),  # every in-place op ends with `_`: x.add_(1), torch.relu_(x), nn.init.zeros_(w)
    re.compile(r"[(,]\s*out\s*=(?!=)"),  # torch.add(a, b, out=c), np.add(a, b, out=c)
    # F.relu(x, inplace=True) and nn.ReLU(inplace=True) modules; F.batch_norm(..., training=True)
    # updates its running statistics; np.copyto(dst, src); a module loading other weights; F.embedding(...,
    # max_norm=1.0) and nn.Embedding(..., max_norm=1.0) renormalise their weight.
    re.compile(r"inplace|copyto|load_state_dict|max_norm"),
    re.compile(r"training\s*=\s*True"),
    AllOf(_MODULE_STATE, _TRAINING_CALL),
    re.compile(r"self\.\w+\.step\s*\("),  # an optimizer another method built (class_facts.py `Held.OPTIMIZER`)
)
