"""Test modules: they set up and tear down process state (environment, caches) for the code under test."""

from __future__ import annotations

from pathlib import PurePath

_TEST_DIRECTORIES = frozenset({"test", "tests", "testing"})


def is_test_file(display: str) -> bool:
    path = PurePath(display)
    name = path.name
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(part in _TEST_DIRECTORIES for part in path.parts[:-1])
    )
