from gpumem_lint.rules.base import Rule


class UnreadableFile(Rule):
    """
    ## What it does
    Reports a file that could not be read or decoded: a permission error, a file that
    vanished during the run, or bytes that are not valid in the file's declared
    encoding (UTF-8 unless a BOM or a PEP 263 coding cookie says otherwise). A cookie naming a codec
    Python lacks (`# -*- coding: future_fstrings -*-`, which a package registers as the interpreter
    starts) is read as UTF-8 where the bytes are UTF-8; it is reported only where they are not.

    ## Why is this bad?
    The file was not analysed. The rest of the run goes on, and the exit code says that
    something needs attention.

    ## Example
    ```python
    # -*- coding: utf-8 -*-
    name = "caf\xe9"   # saved as Latin-1 bytes: not valid UTF-8
    ```

    ## Use instead
    ```python
    # -*- coding: latin-1 -*-
    name = "caf\xe9"
    ```

    ## Fix safety
    There is no automatic fix.

    ## References
    - [PEP 263: Defining Python Source Code Encodings](https://peps.python.org/pep-0263/)
    """

    code = "GML003"
    name = "unreadable-file"
    summary = "File could not be read or decoded"
    fix_title = "Make the file readable, or save it in the encoding it declares"
