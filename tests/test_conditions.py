"""Repeated tests of unchanged values (semantic/conditions.py): which tests are keyed, and which repeat."""

import libcst as cst
import pytest

from gpumem_lint.semantic import conditions


@pytest.mark.parametrize(
    ("test", "key"),
    [
        ("args.use_lora", ("args.use_lora", True)),
        ("not args.use_lora", ("args.use_lora", False)),
        ("not not flag", ("flag", True)),
        ("gpu != -1", ("gpu == -1", False)),
        ("notebook_mode == False", ("notebook_mode", False)),
        ("notebook_mode is True", ("notebook_mode", True)),
        ("notebook_mode != True", ("notebook_mode", False)),
        ("gpu == -1", ("gpu == -1", True)),
        ("mask is not None", ("mask is None", False)),
        ('mode == "train"', ('mode == "train"', True)),
        ('hasattr(model, "module")', ('hasattr(model, "module")', True)),
        ("x > y", None),  # compared with another value, not a literal
        ("f(x)", None),  # a call may answer differently each time
        ("a and b", None),
        ("True", None),
    ],
)
def test_test_key(test, key):
    assert conditions.test_key(cst.parse_expression(test)) == key


def _repeated(source: str) -> list[str]:
    function = cst.parse_module(source).body[0]
    return conditions.repeated_tests(function.body.body)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(gpu):\n    if gpu:\n        a = 1\n    if not gpu:\n        a = 2\n", ["gpu"]),
        ("def f(args):\n    if args.lora:\n        pass\n    if args.lora:\n        pass\n", ["args.lora"]),
        # tested once: nothing to correlate
        ("def f(gpu):\n    if gpu:\n        pass\n", []),
        # rebound between the tests, or through the object it is an attribute of
        ("def f(gpu):\n    if gpu:\n        gpu = False\n    if gpu:\n        pass\n", []),
        ("def f(args):\n    if args.lora:\n        args = g()\n    if args.lora:\n        pass\n", []),
        ("def f(args):\n    if args.lora:\n        args.lora = 0\n    if args.lora:\n        pass\n", []),
        # a loop variable changes every pass
        ("def f(xs):\n    for x in xs:\n        if x:\n            pass\n        if x:\n            pass\n", []),
        # a nested function's tests are its own scope's
        ("def f(g):\n    if g:\n        pass\n    def h(g):\n        if g:\n            pass\n", []),
    ],
)
def test_repeated_tests(source, expected):
    assert _repeated(source) == expected
