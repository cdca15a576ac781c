"""Every form of Python's integer literals (hexadecimal, octal, binary, with underscores) is read, wherever the
analysis reads a number: a worker count, a layer's index, a shape (a `0x00100000` flag crashed GML203 once)."""

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import ALL_RULES

TEMPLATE = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

FLAG = {literal}
workers = {literal}
layers = nn.Sequential(nn.Linear(4, 4), nn.ReLU())


def load(data):
    out = layers[{literal}](torch.zeros({literal}, 4))
    buffer = torch.zeros(8, 4)
    buffer[{literal}:] = buffer[:-{literal}]
    return out, DataLoader(data, num_workers=workers, collate_fn=lambda b: b)
"""


@pytest.mark.parametrize("literal", ["0x1", "0o1", "0b1", "1_0", "0x0"])
def test_integer_literals_of_every_base_are_read(literal):
    codes = {d.code for d in lint_source(TEMPLATE.format(literal=literal), "example.py", ALL_RULES)}
    assert "GML009" not in codes
    # a zero worker count (`0x0`) starts no workers; a nonzero one does, and its lambda is reported
    assert ("GML212" in codes) == (literal != "0x0")
