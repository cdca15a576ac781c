"""Loops reach a fixpoint: what a loop body stores back into the mappings it reads from stays bounded.

A mapping's item (`shared[p]["copy"]`) is its own memory inside the mapping's; stored back into a mapping
the next pass reads it from, it would become an item of an item, pass after pass, and nested loops
multiplied the passes (a 200-line file of lightning-thunder did not finish; without the bound the two
loops below make items 18 deep). Keyed items nest at most `_ITEM_DEPTH` deep; these tests count the
storages the analysis makes, not its time.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from gpumem_lint.semantic import flow
from gpumem_lint.semantic.model import SemanticModel

_STORED_BACK = textwrap.dedent(
    """
    import copy

    def replicate(model, groups):
        shared = {}
        for names in groups:
            for pn in names:
                p = model.get_parameter(pn)
                if p in shared:
                    model.overrides[pn] = shared[p]["param_copy"]
                    continue
                model.overrides[pn] = copy.copy(p)
                shared[p] = {"param_copy": model.overrides[pn]}
        return model.overrides
    """
)


def _item_depths(source: str, monkeypatch) -> dict[str, int]:
    """How many keyed items deep each item storage the analysis makes is, by the key it was read with."""
    items: dict[object, str] = {}
    storage = flow.ScopeAnalyzer._storage

    def recording(self, key, *args):
        made = storage(self, key, *args)
        if key[0] == "item":
            items[made] = key[2]
        return made

    monkeypatch.setattr(flow.ScopeAnalyzer, "_storage", recording)
    SemanticModel.build(cst.parse_module(source))

    def depth(made) -> int:
        return 1 + depth(made.parent) if made.parent in items else 1

    return {f"{items[made]}@{depth(made)}": depth(made) for made in items}


def test_items_stored_back_into_their_mapping_nest_at_most_the_bound(monkeypatch) -> None:
    depths = _item_depths(_STORED_BACK, monkeypatch)
    assert depths, "the snippet reads keyed items"
    assert max(depths.values()) <= 2, sorted(depths)  # `d["a"]["b"]`, no deeper however many passes


def test_nested_items_keep_their_own_memory_up_to_the_bound(monkeypatch) -> None:
    depths = _item_depths('def f(d):\n    d["a"]["b"].add_(1)\n    return d["a"]["c"]\n', monkeypatch)
    assert sorted(depths) == ['"a"@1', '"b"@2', '"c"@2']
