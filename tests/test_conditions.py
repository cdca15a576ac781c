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
        ("len(ids) > 1", ("len(ids) > 1", True)),
        ("len(ids) != 1", ("len(ids) == 1", False)),
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
        # comparisons of one subject with integers; the subject bound once before the first test
        (
            "def f(n):\n    ids = range(n)\n    if len(ids) > 1:\n        pass\n    if len(ids) == 1:\n        pass\n",
            ["len(ids) > 1", "len(ids) == 1"],
        ),
        # ... but not when bound inside a block, or changed by a method between the tests
        (
            "def f(n):\n    if n:\n        ids = g()\n    if len(ids) > 1:\n        pass\n    if len(ids) == 1:\n        pass\n",
            [],
        ),
        ("def f(ids):\n    if len(ids) > 1:\n        ids.pop()\n    if len(ids) == 1:\n        pass\n", []),
    ],
)
def test_repeated_tests(source, expected):
    assert _repeated(source) == expected


@pytest.mark.parametrize(
    ("first", "second", "exclusive"),
    [
        (("len(ids) > 1", True), ("len(ids) == 1", True), True),
        (("len(ids) > 1", True), ("len(ids) >= 1", True), False),
        (("n < 0", True), ("n > 0", True), True),
        (("n == 2", False), ("n == 3", False), False),
        (("n == 2", True), ("m == 3", True), False),  # two subjects
        (('mode == "a"', True), ('mode == "b"', True), False),  # not integers: not decided here
    ],
)
def test_exclusive(first, second, exclusive):
    assert conditions.exclusive(first, second) is exclusive


def _around(source: str, marked: str) -> list[str]:
    """The tests around every call of `marked` in the function's body."""
    function = cst.parse_module(source).body[0]
    calls = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == marked:
                calls.append(node)

    function.visit(Calls())
    return conditions.tests_around(function.body.body, calls)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # either arm of a conditional expression, or of a statement, nested tests outermost first
        ("def f(x, c):\n    y = save(x) if c else x\n", ["c"]),
        ("def f(x, c):\n    y = x if c else save(x)\n", ["c"]),
        ("def f(x, a, b):\n    if a:\n        if not b:\n            save(x)\n", ["a", "b"]),
        ("def f(x, a, b):\n    if a:\n        pass\n    elif b:\n        save(x)\n", ["a", "b"]),
        # the test itself is in no arm; a test that no arm around the node makes is not taken
        ("def f(x):\n    if save(x):\n        pass\n", []),
        ("def f(x, c):\n    if c:\n        pass\n    save(x)\n", []),
        # changed in the scope, or not a keyed test
        ("def f(x, c):\n    c = not c\n    y = save(x) if c else x\n", []),
        ("def f(x, a, b):\n    y = save(x) if a > b else x\n", []),
    ],
)
def test_tests_around(source, expected):
    assert _around(source, "save") == expected


@pytest.mark.parametrize(
    ("loop", "test", "last"),
    [
        ("for i in range(self.n):", "i != self.n - 1", False),
        ("for i in range(self.n):", "i == self.n - 1", True),
        ("for i in range(1, n):", "i < n - 1", False),
        ("for i in range(n):", "i + 1 == n", True),
        ("for i, layer in enumerate(self.layers):", "i < len(self.layers) - 1", False),
        ("for i, layer in enumerate(self.layers):", "i == len(self.layers)-1", True),
        ("for i in range(n):", "i > 0", None),  # true on the last pass only when n > 1
        ("for i in range(0, n, 2):", "i != n - 1", None),  # a step: the last index is not n - 1
        ("for i in items:", "i != n - 1", None),
        ("for i in range(m):", "i != n - 1", None),  # another bound
    ],
)
def test_last_pass_tests(loop: str, test: str, last: bool | None):
    statement = cst.parse_statement(f"{loop}\n    if {test}:\n        x = relu(x)\n")
    tests = conditions.last_pass_tests(statement)
    assert tests.get(conditions.spaceless(cst.parse_expression(test))) is last


def test_a_loop_that_tests_no_index_gets_no_last_pass():
    statement = cst.parse_statement("for i in range(n):\n    x = layer(x)\n    if training:\n        x = drop(x)\n")
    assert conditions.last_pass_tests(statement) == {}


@pytest.mark.parametrize(
    ("loop", "test", "invariant"),
    [
        ("for x in xs:\n    step(x)\n", "n_gpus", True),
        ("for x in xs:\n    step(x)\n", "not args.keep_cache", True),
        ("for x in xs:\n    step(x)\n", 'mode == "train"', True),
        ("for x in xs:\n    step(x)\n", "x", False),  # the loop's target
        ("for i, x in enumerate(xs):\n    step(x)\n", "i == 0", False),
        ("for x in xs:\n    oom = step(x)\n", "oom", False),  # bound by a pass
        ("for x in xs:\n    args.fast = step(x)\n", "args.fast", False),  # an attribute a pass sets
        ("for x in xs:\n    cfg = step(x)\n", "cfg.fast", False),  # the object it is an attribute of
        ("while running:\n    running = step()\n", "running", False),
        ("for x in xs:\n    step(x)\n", "step % 100 == 0", False),  # a computed subject: not keyed
        ("for x in xs:\n    step(x)\n", "torch.cuda.is_available()", False),  # a call may answer differently
    ],
)
def test_loop_invariants(loop: str, test: str, invariant: bool):
    node = cst.parse_module(loop).body[0]
    assert conditions.LoopInvariants(node).holds(cst.parse_expression(test)) is invariant
