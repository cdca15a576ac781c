"""A dataset holding CUDA tensors made in the main process is one finding: GML203 when the
DataLoader forks its workers (they are handed CUDA memory they cannot use), GML205 when they start
with spawn (each maps it into its own CUDA context)."""

from __future__ import annotations

import pytest

from gpumem_lint.engine import lint_source
from gpumem_lint.rules import ALL_RULES

TENSOR_DATASET = """
import torch
from torch.utils.data import DataLoader, TensorDataset

features = torch.randn(12, 4).cuda()
loader = DataLoader(TensorDataset(features), num_workers=2{context})
"""

READ_ATTRIBUTE = """
import torch
from torch.utils.data import DataLoader, Dataset

class OnGpu(Dataset):
    def __init__(self, x):
        self.x = x.cuda()

    def __getitem__(self, i):
        return self.x[i]

loader = DataLoader(OnGpu(torch.ones(4)), num_workers=2{context})
"""


@pytest.mark.parametrize("program", [TENSOR_DATASET, READ_ATTRIBUTE])
@pytest.mark.parametrize(
    ("context", "code"),
    [
        ("", "GML203"),
        (', multiprocessing_context="spawn"', "GML205"),
        (', **{"multiprocessing_context": "spawn"}', "GML205"),  # the start method a spread gives
        (', **{"multiprocessing_context": "fork"}', "GML203"),
    ],
)
def test_one_code_per_start_method(program, context, code):
    codes = [d.code for d in lint_source(program.format(context=context), "example.py", ALL_RULES)]
    assert codes == [code]
