from gpumem_lint.rules.base import Rule


class InternalError(Rule):
    """
    ## What it does
    Reports that gpumem-lint itself failed while analysing a file, naming the rule and
    the place in gpumem-lint's source where it failed.

    ## Why is this bad?
    It is a bug in gpumem-lint, not in your code: that file was not fully checked. The
    rest of the run goes on. Please report it with the file (or a reduced copy).

    ## Example
    ```python
    # any file that makes an analysis crash
    ```

    ## Use instead
    ```python
    # nothing to change in your code; exclude the file until the bug is fixed
    ```

    ## Fix safety
    There is no automatic fix.

    ## References
    - [Issue tracker](https://github.com/gpumem-lint/gpumem-lint/issues)
    """

    code = "GML009"
    name = "internal-error"
    summary = "gpumem-lint failed while analysing this file"
    fix_title = "Report this with the file; meanwhile exclude it or add `# gpumem-lint: noqa`"
