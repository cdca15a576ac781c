"""The text that every write the alias analysis records contains.

A scope whose own source matches none of `WRITES` holds no write (flow.py and
calls.py, every `_write` call site), so no GML1xx finding can lie in it: those
rules declare `scope_triggers = WRITES` and the engine's fast path (fast_path.py)
hollows such scopes out before parsing. The patterns over-approximate on purpose
(`d.update(...)` matches, most dict updates write no tensor); missing a form loses
findings, so tests/test_fast_path.py checks that every write-making name in the
knowledge tables matches, and that the fast path and the full parse agree.

Each pattern starts with a literal or a small character class, so that the regex
engine skips ahead between candidates: together they cost about 5 % of a libcst parse.

Writes through another scope are not this module's business: calling a function
that writes its argument, and a module made `inplace` in `__init__` and called in
`forward`, are links between scopes that the fast path keeps (see fast_path.py).
"""

from __future__ import annotations

import re

WRITES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        r"[-+*/%&|^@]=(?!=)",  # augmented assignment: x += y, x[i] *= 2, x //= 2, x **= 2
        r"(?:<<|>>)=",  # x <<= 1
        r"[\])][ \t]*(?::[^=\n]*)?=(?!=)",  # x[i] = v, x[i]: T = v, (a, x[i]) = v, [a, b] = v
        r"\n[ \t]*[\w.]+\[[^\n]*\][ \t]*,[^\n]*=",  # x[i], y = v
        r"\n[ \t]*[\w.]+[ \t]*,[^\n(]*\][ \t]*,[^\n]*=",  # a, x[i], b = v
        r"for\b[^\n]*\][^\n]*\bin\b",  # for x[i] in ..., also in comprehensions
        r"as\b[^\n:]*\]",  # with f() as x[i]
        r"\.data\b",  # p.data = t, p.data.add_(...)
        r"_(?<=[^\W_]_)\s*\(",  # every in-place op ends with `_`: x.add_(1), torch.relu_(x), nn.init.zeros_(w)
        r"[(,]\s*out\s*=(?!=)",  # torch.add(a, b, out=c), np.add(a, b, out=c)
        r"inplace|training|copyto|load_state_dict",  # F.relu(x, inplace=True), F.batch_norm(training=True), ...
        # Training calls write the modules they reach: train(...), fit(...), x_epoch(...), step(), update().
        r"(?:[Tt](?i:rain)|[Ff](?i:it)|[Ee](?i:poch)|[Ss](?i:tep)|[Oo](?i:ptimi[sz]e)|[Ll](?i:earn)|[Uu](?i:pdate))"
        r"\w*\s*\(",
    )
)
