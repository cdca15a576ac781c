"""Hollowing imported modules: what stays, what goes, and that summaries do not change."""

from __future__ import annotations

import textwrap

import pytest

from gpumem_lint.fast_path import cpython_tree
from gpumem_lint.semantic import import_time_source as hollowing
from gpumem_lint.semantic import module_graph
from gpumem_lint.semantic.import_time_source import ImportStatements, import_time_source


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

        class Config:
            \"\"\"Run at import, never by a call.\"\"\"
            import os
            device = torch.device("cuda")
            torch.cuda.init()

            class Inner:
                size: int = 1

            def __init__(self):
                self.make()

            def make(self):
                torch.cuda.set_device(0)

        class Only:
            lr = 0.1; momentum = torch.zeros(1, device="cuda")

        def build():
            return Config()
        """,
        "build",
        """
        import torch

        class Config:
            import os

            class Inner:
                pass

            def __init__(self):
                self.make()

            def make(self):
                torch.cuda.set_device(0)

        class Only:
            pass

        def build():
            return Config()
        """,
        id="a-function-summary-runs-no-class-body",
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
    pytest.param(
        """
        import torch

        def main():
            torch.cuda.init()

        if __name__ == "__main__":
            main()
        """,
        None,
        """
        import torch

        def main():
            pass

        if __name__ == "__main__":
            main()
        """,
        id="the-main-block-does-not-run-at-import",
    ),
]


@pytest.mark.parametrize(("source", "function", "expected"), CASES)
def test_hollowed_text(source: str, function: str | None, expected: str | None):
    reduction = import_time_source(_dedent(source), cpython_tree(_dedent(source)), function)
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
    reduction = import_time_source(source, cpython_tree(source))
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


def _imports_only(tmp_path, source: str) -> str | None:
    """The text a summary of importing `source` reads, as a first-party module of a project."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "helpers.py").write_text("def setup():\n    pass\n")
    (tmp_path / "warm.py").write_text("import torch\ntorch.cuda.init()\n")
    path = tmp_path / "module.py"
    path.write_text(_dedent(source))
    text = path.read_text()
    tree = cpython_tree(text)
    reduction = import_time_source(text, tree, None, module_graph._calls_that_act(tree, path))
    if reduction is None:
        return None
    assert isinstance(reduction, ImportStatements)
    return "".join(source + "\n" for _, source in reduction.statements)


# (module, the import statements a summary reads, or None when something else may act too)
IMPORT_ONLY_CASES = [
    pytest.param(
        """
        import logging
        import torch; import numpy as np
        try:
            import apex
        except ImportError:
            from torch import amp
        else:
            import fused
        finally:
            import atexit

        log = logging.getLogger(__name__)

        class Net(torch.nn.Module):
            from torch import nn

            def forward(self, x):
                import math
                return torch.zeros(3, device="cuda")
        """,
        """
        import logging
        import torch;
        import numpy as np
        import apex
        from torch import amp
        import fused
        import atexit
        from torch import nn
        """,
        id="imports-in-source-order-with-their-semicolons",
    ),
    pytest.param(
        "import helpers\nfrom warm import *\nimport os, torch.nn as nn\nfrom . import warm\n",
        "import helpers\nfrom warm import *\nimport os, torch.nn as nn\nfrom . import warm\n",
        id="first-party-modules-and-what-they-cause",
    ),
    pytest.param("import torch\nDEVICE = torch.device('cuda')\n", None, id="a-call-the-table-knows"),
    pytest.param("import torch\nx = torch.ones(2, device=dev)\n", None, id="a-device-keyword"),
    pytest.param("from torch.cuda import init as start\nstart()\n", None, id="an-alias-of-a-call-the-table-knows"),
    pytest.param("from helpers import setup\nsetup()\n", None, id="a-call-into-a-first-party-module"),
    pytest.param("import torch\ndef main():\n    pass\nmain()\n", None, id="a-call-of-its-own-function"),
    pytest.param("import torch\nif __name__ == '__main__':\n    import numpy\n", "import torch\n", id="a-main-guard"),
    pytest.param(
        """
        import torch
        if '__main__' == __name__:
            import numpy
            torch.cuda.init()
        else:
            import helpers
        """,
        "import torch\nimport helpers\n",
        id="a-main-guard-runs-its-else-block-at-import",
    ),
    pytest.param(
        "import torch\nif __name__ == '__ma' 'in__':\n    import numpy\n",
        "import torch\nimport numpy\n",
        id="a-guard-program-order-does-not-know-is-any-if",
    ),
]


@pytest.mark.parametrize(("source", "expected"), IMPORT_ONLY_CASES)
def test_imports_only(tmp_path, source: str, expected: str | None):
    # None: the module has nothing to hollow either, and is read whole.
    assert _imports_only(tmp_path, source) == (None if expected is None else _dedent(expected))


@pytest.mark.parametrize(("source", "expected"), IMPORT_ONLY_CASES)
def test_import_only_summaries_are_those_of_the_whole_module(tmp_path, monkeypatch, source, expected):
    _imports_only(tmp_path, source)
    path = tmp_path / "module.py"
    mtime = path.stat().st_mtime_ns
    monkeypatch.setattr(hollowing, "enabled", False)
    whole = module_graph._summarise(path, mtime, 1, None)
    monkeypatch.setattr(hollowing, "enabled", True)
    assert module_graph._summarise(path, mtime, 1, None) == whole


def test_import_only_summaries_hold_the_events_of_the_modules_they_import(tmp_path):
    _imports_only(tmp_path, "import os\nfrom warm import *\nimport torch.nn as nn\n")
    path = tmp_path / "module.py"
    summary = module_graph._summarise(path, path.stat().st_mtime_ns, 1, None)
    found = [(site.event, site.call, site.line, site.file, site.path.name) for site in summary.sites]
    assert found == [
        ("import_torch", "import torch", 1, "warm.py", "warm.py"),
        ("torch_cuda_init", "torch.cuda.init()", 2, "warm.py", "warm.py"),
    ]
    assert summary.files == {path, (tmp_path / "warm.py").resolve()}
