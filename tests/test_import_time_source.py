"""Hollowing imported modules: what stays, what goes, and that summaries do not change."""

from __future__ import annotations

import textwrap

import pytest

from gpumem_lint.semantic import import_time_source as hollowing
from gpumem_lint.semantic import module_graph
from gpumem_lint.semantic.import_time_source import import_time_source


def _dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# (module, function summarised or None for the import, the text libcst gets, or None for the whole file)
CASES = [
    pytest.param(
        """
        import torch

        def helper():
            x = torch.zeros(3, device="cuda")
            return x

        def unused():
            import numpy as np
            torch.cuda.init()
        """,
        None,
        """
        import torch

        def helper():
            pass

        def unused():
            import numpy as np
        """,
        id="bodies-nothing-calls-keep-their-imports",
    ),
    pytest.param(
        """
        import torch

        def setup():
            return helper()

        def helper():
            torch.cuda.init()

        def other():
            torch.zeros(1)

        setup()
        """,
        None,
        """
        import torch

        def setup():
            return helper()

        def helper():
            torch.cuda.init()

        def other():
            pass

        setup()
        """,
        id="calls-at-import-are-followed",
    ),
    pytest.param(
        """
        import functools

        @functools.lru_cache()
        def cached(
            a,
            b=make_default(),
        ):
            return a

        def make_default():
            return 1

        def one_line(): return torch.cuda.init()
        """,
        None,
        """
        import functools

        @functools.lru_cache()
        def cached(
            a,
            b=make_default(),
        ):
            pass

        def make_default():
            return 1

        def one_line(): return torch.cuda.init()
        """,
        id="decorators-and-defaults-run-at-import",
    ),
    pytest.param(
        """
        class Trainer:
            device = pick()

            def __init__(self):
                self.prepare()

            def prepare(self):
                torch.cuda.set_device(0)

            def fit(self):
                from torch import (
                    nn,  # layers
                )
                self.step()

        Trainer()
        """,
        None,
        """
        class Trainer:
            device = pick()

            def __init__(self):
                self.prepare()

            def prepare(self):
                torch.cuda.set_device(0)

            def fit(self):
                from torch import (
                    nn,  # layers
                )

        Trainer()
        """,
        id="constructors-and-self-calls-multi-line-imports",
    ),
    pytest.param(
        """
        def main():
            run()

        def run():
            torch.cuda.init()

        def unrelated():
            torch.zeros(1)

        if __name__ == "__main__":
            main()
        """,
        "run",
        """
        def main():
            pass

        def run():
            torch.cuda.init()

        def unrelated():
            pass

        if __name__ == "__main__":
            main()
        """,
        id="a-function-summary-keeps-what-the-function-reaches",
    ),
    pytest.param(
        """
        import torch

        x = torch.zeros(1)

        def f(): return 1
        """,
        None,
        None,
        id="nothing-to-hollow",
    ),
    pytest.param("def f(:\n    pass\n", None, None, id="what-CPython-rejects-is-read-whole"),
]


@pytest.mark.parametrize(("source", "function", "expected"), CASES)
def test_hollowed_text(source: str, function: str | None, expected: str | None):
    reduction = import_time_source(_dedent(source), function)
    if expected is None:
        assert reduction is None
    else:
        assert reduction is not None
        assert reduction.text == _dedent(expected)
        assert len(reduction.origin) == reduction.text.count("\n")


def test_origin_maps_lines_back():
    source = _dedent(
        """
        def hollow():
            a = 1
            b = 2

        import torch
        torch.cuda.init()
        """
    )
    reduction = import_time_source(source)
    assert reduction is not None
    lines = reduction.text.splitlines()
    assert lines[lines.index("torch.cuda.init()")] == "torch.cuda.init()"
    assert reduction.origin[lines.index("torch.cuda.init()")] == 6
    assert reduction.origin[lines.index("    pass")] == 2


@pytest.mark.parametrize(("source", "function", "expected"), CASES)
def test_summaries_are_those_of_the_whole_module(tmp_path, monkeypatch, source, function, expected):
    path = tmp_path / "module.py"
    path.write_text(_dedent(source))
    mtime = path.stat().st_mtime_ns
    monkeypatch.setattr(hollowing, "enabled", False)
    whole = module_graph._summarise(path, mtime, 1, function)
    monkeypatch.setattr(hollowing, "enabled", True)
    assert module_graph._summarise(path, mtime, 1, function) == whole
