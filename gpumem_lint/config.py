"""Settings: the `[tool.gpumem-lint]` table of the nearest pyproject.toml, merged with CLI flags.

The file is parsed as TOML and checked key by key; nothing in it is executed. Rule
selectors are kept as written here and resolved (and checked) by `selection`.

`extend = "../pyproject.toml"` (or a `gpumem-lint.toml`, whose top level is the table) reads a
base configuration first, as ruff does for monorepos: the extending file's keys override the
base's, `extend-select` and `extend-exclude` add to them, and the base's path patterns keep
meaning paths under the base's directory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TABLE = "tool.gpumem-lint"

#: Directories no one wants linted; `exclude` replaces this list, `extend-exclude` adds to it.
DEFAULT_EXCLUDE = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".gpumem_lint_cache",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    "__pycache__",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

_LIST_KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude")
_KNOWN_KEYS = (*_LIST_KEYS, "extend", "per-file-ignores", "target-version")


class ConfigError(Exception):
    """What the user asked for cannot be done: bad configuration, option or path. Exit code 2."""


@dataclass(frozen=True)
class SelectorLayer:
    """One source of rule selectors; later layers override earlier ones, as in ruff."""

    #: Where the selectors came from, for error messages: a file's table, or "command line".
    origin: str
    #: `None` keeps what earlier layers selected; a tuple replaces it.
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


@dataclass(frozen=True)
class CliOverrides:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    force_exclude: bool = False


@dataclass(frozen=True)
class Settings:
    #: Paths in `exclude` and `per-file-ignores` patterns are relative to this directory.
    project_root: Path
    config_file: Path | None
    selector_layers: tuple[SelectorLayer, ...]
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...]
    #: Gitwildmatch patterns: the default (or configured) excludes plus `extend-exclude`.
    exclude: tuple[str, ...]
    force_exclude: bool


def load_settings(
    paths: Sequence[str],
    cli: CliOverrides,
    config_file: Path | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Read the explicit `config_file`, or the nearest one above the first path, and apply `cli`."""
    cwd = Path(os.path.abspath(cwd or Path.cwd()))
    if config_file is not None:
        config_file = Path(os.path.abspath(config_file))
        if not config_file.is_file():
            raise ConfigError(f"{display_path(config_file, cwd)}: configuration file not found")
        table = _read_table(config_file, cwd) or {}
    else:
        start = cwd / paths[0] if paths else cwd
        found = find_config(start, cwd)
        config_file, table = found if found else (None, {})
    root = config_file.parent if config_file else cwd
    chain = _extended(config_file, table, cwd) if config_file else [("defaults", root, table)]
    layers = []
    exclude: tuple[str, ...] | None = None
    extend_exclude: list[str] = []
    per_file_ignores: dict[str, tuple[str, ...]] | None = None
    for where, directory, layer in chain:  # the base first
        layers.append(
            SelectorLayer(
                origin=f"{where} [{TABLE}]",
                select=_tuple_or_none(layer.get("select")),
                extend_select=tuple(layer.get("extend-select", ())),
                ignore=tuple(layer.get("ignore", ())),
            )
        )
        if "exclude" in layer:
            exclude = tuple(_rebased(layer["exclude"], directory, root))
        extend_exclude += _rebased(layer.get("extend-exclude", ()), directory, root)
        if "per-file-ignores" in layer:
            per_file_ignores = {
                rebased: tuple(selectors)
                for pattern, selectors in layer["per-file-ignores"].items()
                for rebased in _rebased((pattern,), directory, root)
            }
    layers.append(SelectorLayer("command line", cli.select, cli.extend_select, cli.ignore))
    return Settings(
        project_root=root,
        config_file=config_file,
        selector_layers=tuple(layers),
        per_file_ignores=tuple((per_file_ignores or {}).items()),
        exclude=(DEFAULT_EXCLUDE if exclude is None else exclude) + tuple(extend_exclude),
        force_exclude=cli.force_exclude,
    )


def _extended(config_file: Path, table: dict, cwd: Path) -> list[tuple[str, Path, dict]]:
    """(name, directory, table) of `config_file` and the files it extends, the first base first."""
    chain: list[tuple[str, Path, dict]] = []
    seen: list[Path] = []
    while True:
        where = display_path(config_file, cwd)
        if config_file in seen:
            raise ConfigError(f"{where}: 'extend' makes a cycle ({' -> '.join(display_path(p, cwd) for p in seen)})")
        seen.append(config_file)
        _validate(table, where)
        chain.insert(0, (where, config_file.parent, table))
        if "extend" not in table:
            return chain
        named = os.path.expandvars(os.path.expanduser(table["extend"]))
        base = Path(os.path.abspath(config_file.parent / named))
        if not base.is_file():
            raise ConfigError(f"{where}: 'extend' names {display_path(base, cwd)}, which does not exist")
        config_file, table = base, _read_base(base, cwd)


def _read_base(path: Path, cwd: Path) -> dict:
    """A pyproject.toml's table, or a gpumem-lint.toml whose top level is the table."""
    if path.name == "pyproject.toml":
        return _read_table(path, cwd) or {}
    tomllib = _tomllib()
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as error:
        raise ConfigError(f"{display_path(path, cwd)}: cannot read file: {error.strerror or error}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{display_path(path, cwd)}: invalid TOML: {error}") from error


def _rebased(patterns: Sequence[str], directory: Path, root: Path) -> list[str]:
    """Gitwildmatch patterns written relative to `directory`, as the project at `root` reads them.

    An unanchored pattern (`*_pb2.py`, `build/`) means the same anywhere. An anchored one
    (`pkg/gen/`, `/setup.py`) keeps the part below `root`, and is dropped if it names nothing there.
    """
    if directory == root:
        return list(patterns)
    try:
        prefix = root.relative_to(directory).as_posix() + "/"
    except ValueError:
        prefix = None  # the base is not above the project: its anchored patterns cannot match in it
    rebased = []
    for pattern in patterns:
        negation, body = ("!", pattern[1:]) if pattern.startswith("!") else ("", pattern)
        if "/" not in body.rstrip("/") or body.startswith("**/"):
            rebased.append(pattern)
        elif prefix is not None and body.lstrip("/").startswith(prefix):
            rebased.append(f"{negation}/{body.lstrip('/')[len(prefix):]}")
    return rebased


def find_config(start: Path, cwd: Path) -> tuple[Path, dict] | None:
    """The nearest pyproject.toml at or above `start` that has a `[tool.gpumem-lint]` table."""
    start = Path(os.path.abspath(start))
    directory = start if start.is_dir() else start.parent
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / "pyproject.toml"
        if candidate.is_file():
            table = _read_table(candidate, cwd)
            if table is not None:
                return candidate, table
    return None


def _read_table(path: Path, cwd: Path) -> dict | None:
    tomllib = _tomllib()
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except OSError as error:
        raise ConfigError(f"{display_path(path, cwd)}: cannot read file: {error.strerror or error}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{display_path(path, cwd)}: invalid TOML: {error}") from error
    table = document.get("tool", {}).get("gpumem-lint")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{display_path(path, cwd)}: [{TABLE}] must be a table")
    return table


def _tomllib():
    """The TOML parser, imported when there is a file to read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    return tomllib


def _validate(table: dict, where: str) -> None:
    from gpumem_lint.target import parse_target_version

    for key, value in table.items():
        if key not in _KNOWN_KEYS:
            import difflib

            close = difflib.get_close_matches(key, _KNOWN_KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{where}: unknown key '{key}' in [{TABLE}]{hint}")
        if key == "target-version" and not (isinstance(value, str) and parse_target_version(value)):
            raise ConfigError(
                f"{where}: 'target-version' in [{TABLE}] must be a string such as \"py313\", got {value!r}"
            )
        if key == "extend" and not isinstance(value, str):
            raise ConfigError(f"{where}: 'extend' in [{TABLE}] must be a path (a string), got {_toml_type(value)}")
        if key in _LIST_KEYS and not _is_list_of_strings(value):
            raise ConfigError(f"{where}: '{key}' in [{TABLE}] must be a list of strings, got {_toml_type(value)}")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where}: 'per-file-ignores' in [{TABLE}] must be a table, got {_toml_type(per_file)}")
    for pattern, selectors in per_file.items():
        if not _is_list_of_strings(selectors):
            raise ConfigError(
                f"{where}: per-file-ignores entry '{pattern}' in [{TABLE}] "
                f"must be a list of strings, got {_toml_type(selectors)}"
            )


def _is_list_of_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _toml_type(value: object) -> str:
    if isinstance(value, list):
        return "an array with non-string items"
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a float", dict: "a table"}
    return names.get(type(value), type(value).__name__)


def _tuple_or_none(value: list[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def display_path(path: Path, cwd: Path) -> str:
    """How output names a path: relative to `cwd` when under it (as ruff does), with '/'."""
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return path.as_posix()


def project_relative(path: Path, root: Path) -> str:
    """`path` as exclude and per-file-ignores patterns see it: relative to the project root.

    A path outside the root keeps its absolute form (minus the leading '/'), so only
    unanchored patterns such as `*_test.py` can match it.
    """
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return absolute.as_posix().lstrip("/")
