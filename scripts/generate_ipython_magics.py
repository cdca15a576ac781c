"""Generate gpumem_lint/knowledge/ipython.json: the line magics IPython runs without their `%`.

With automagic on (IPython's default), a cell of one line that begins with a line magic's name
(`ls /data`, `cd ..`, `pip install timm`) runs that magic. The linter masks such a cell, as it
masks `%ls`, without importing IPython: the names come from IPython's own shell, read here.
tests/test_notebooks.py regenerates the table and fails on any difference.

Usage: python scripts/generate_ipython_magics.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import IPython
from IPython.core.interactiveshell import InteractiveShell

OUT_PATH = Path(__file__).resolve().parents[1] / "gpumem_lint" / "knowledge" / "ipython.json"


def build_table() -> dict:
    shell = InteractiveShell.instance()
    return {
        "ipython_version": IPython.__version__,
        "automagic": shell.automagic,
        "line_magics": sorted(shell.magics_manager.lsmagic()["line"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the checked-in table is stale")
    args = parser.parse_args()
    text = json.dumps(build_table(), indent=1) + "\n"
    if args.check:
        if OUT_PATH.read_text(encoding="utf-8") != text:
            print(f"{OUT_PATH} is stale; run scripts/generate_ipython_magics.py", file=sys.stderr)
            return 1
        return 0
    OUT_PATH.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
