"""The corpora the benchmarks run on, and the files in them.

The installed torch package is everywhere `pip install torch` is; the others are real
projects unpacked from their wheels or repositories into $GPUMEM_LINT_CORPORA
(default /work/corpora): timm and transformers from their wheels (timm 1.0.31,
transformers 5.24.0), the rest from their public repositories.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

CORPORA_DIR = Path(os.environ.get("GPUMEM_LINT_CORPORA", "/work/corpora"))
#: In the order the benchmark reports them: small, medium, large.
PROJECTS = ("examples", "nanoGPT", "detr", "dino", "yolov5", "lightning", "fairseq-0.12.2", "timm", "transformers")


def torch_package() -> Path | None:
    """The installed torch package's directory, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_corpora() -> dict[str, Path]:
    found = {name: CORPORA_DIR / name for name in PROJECTS if (CORPORA_DIR / name).is_dir()}
    torch = torch_package()
    if torch is not None:
        found["torch"] = torch
    return found


def compile_linter() -> None:
    """Byte-compile gpumem_lint as `pip install` does. An editable install under
    PYTHONDONTWRITEBYTECODE (this workplace sets it) would otherwise compile every module from
    source in every run, which no installed copy does, while libcst, installed from a wheel, has its bytecode."""
    import compileall

    import gpumem_lint

    compileall.compile_dir(Path(gpumem_lint.__file__).parent, quiet=1)


def python_files(root: Path) -> list[Path]:
    """Every `.py` file under root, sorted: what the linter and the floor both get."""
    return sorted(path for path in root.rglob("*.py") if path.is_file())
