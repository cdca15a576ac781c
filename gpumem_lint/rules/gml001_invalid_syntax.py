from gpumem_lint.rules.base import Invalid, Rule


class InvalidSyntax(Rule):
    """
    ## What it does
    Reports a file that is not valid Python, at the position where parsing stopped. A script whose
    shebang names Python 2 (`#!/usr/bin/env python2`) is run so by its shell: it is not reported,
    and not analysed when Python 3 cannot parse it.

    ## Why is this bad?
    A file that does not parse cannot be analysed, so no other rule can check it. The
    rest of the run goes on: every other file is still linted.

    ## Example
    ```python
    def step(model:
        pass
    ```

    ## Use instead
    ```python
    def step(model):
        pass
    ```

    ## Fix safety
    There is no automatic fix.

    ## References
    - [ruff: invalid-syntax diagnostics](https://docs.astral.sh/ruff/linter/)
    """

    code = "GML001"
    name = "invalid-syntax"
    summary = "File is not valid Python and cannot be analysed"
    fix_title = "Fix the syntax error; nothing else in this file was checked"
    VALID = ("x = 1\n",)
    INVALID = (Invalid("import torch\ndef f(:\n    pass\n", (2,)),)
