"""Tests a function makes more than once of a value it never rebinds: each takes the same arm every time.

`if not args.use_lora: sd = model.state_dict()` ... `if args.use_lora: ... else: torch.save(sd, path)`:
the path that skips the binding and reaches the save takes opposite arms of one unchanged test, so no
run takes it; nor does a loop's next pass change the answer. The flow analysis joins the arms of each
`if`, so on its own it pairs a write on one such path with a read on the other. A scope whose facts
hold reads is analysed again under each value of each test it repeats (`ScopeAnalyzer(assumed=...)`
takes only the arm that value selects); a read is kept when, for every such test, some value reaches it.
The program order (`program_order.py`) marks the arms of such tests, so that no path through one call of
a function takes opposite arms of two of them (`if notebook_mode == False: setup()` ... `if notebook_mode:
setup()` runs `setup` once).

A test is a name or attribute (`args.use_lora`, `allGPU`), `not` of one, its comparison with a literal
(`mode == "train"`, `x is None`; `!=` and `is not` are the negations; `flag == False` is `not flag`), or
`hasattr`/`isinstance` of names. It is unchanged when nothing in the scope assigns, deletes or loops over
its names (or the objects they are attributes of); a call that changes an attribute is not seen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable

import libcst as cst

from gpumem_lint.semantic.imports import dotted_name
from gpumem_lint.semantic.walk import Walker

#: Calls whose result depends only on their arguments' identity and class.
_PURE_TESTS = frozenset({"hasattr", "isinstance", "callable"})
#: At most this many tests are split on (two analyses each).
MAX_TESTS = 4

_NEGATED = {"!=": "==", "is not": "is", "not in": "in"}
_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.Name)  # a Name only as True/False/None


def test_key(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """The test's text with `not` taken off, and whether it holds when that text does."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = test_key(test.expression)
        return (inner[0], not inner[1]) if inner else None
    if isinstance(test, (cst.Name, cst.Attribute)):
        place = dotted_name(test)
        return (place, True) if place is not None and place not in ("True", "False", "None") else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, (comparison,) = test.left, test.comparisons
        operator = _code(comparison.operator).strip()
        subject = _subject(left)
        if subject is None or not _literal(comparison.comparator):
            return None
        polarity = operator not in _NEGATED
        operator = _NEGATED.get(operator, operator)
        comparator = _code(comparison.comparator).strip()
        if comparator in ("True", "False") and operator in ("==", "is"):  # `flag == False` is `not flag`
            return subject, polarity == (comparator == "True")
        return f"{subject} {operator} {comparator}", polarity
    if isinstance(test, cst.Call) and dotted_name(test.func) in _PURE_TESTS:
        if all(not arg.star and (dotted_name(arg.value) or _literal(arg.value)) for arg in test.args):
            return _code(test), True
    return None


def _subject(left: cst.BaseExpression) -> str | None:
    """What a comparison tests: a name or attribute (`args.mode`), or the length of one (`len(gpu_ids)`)."""
    if isinstance(left, cst.Call) and dotted_name(left.func) == "len" and len(left.args) == 1:
        inner = dotted_name(left.args[0].value)
        return f"len({inner})" if inner is not None and not left.args[0].star else None
    return dotted_name(left)


def repeated_tests(body: Iterable[cst.CSTNode]) -> list[str]:
    """The tests (by `test_key`) that the scope makes in more than one `if` and never changes, in order:
    the same test, or comparisons of one subject with integers (`len(ids) > 1` ... `len(ids) == 1`)."""
    finder = _Tests(setup=True)
    for statement in body:
        finder.walk(statement)
    counts = Counter(key for key, _ in finder.tests)
    subjects = Counter(bound[0] for key, _ in finder.tests if (bound := _integer_bound(key)) is not None)
    repeated = []
    for key, places in finder.tests:
        bound = _integer_bound(key)
        again = counts[key] > 1 or (bound is not None and subjects[bound[0]] > 1)
        if again and key not in repeated and not any(_changed(place, finder.assigned) for place in places):
            repeated.append(key)
    return repeated[:MAX_TESTS]


_ORDERS = {"==": int.__eq__, ">": int.__gt__, ">=": int.__ge__, "<": int.__lt__, "<=": int.__le__}


def _integer_bound(key: str) -> tuple[str, str, int] | None:
    """`("len(ids)", ">", 1)` of the key `len(ids) > 1`: a subject compared with an integer."""
    subject, _, rest = key.rpartition(" ")
    subject, _, operator = subject.rpartition(" ")
    if operator not in _ORDERS or not rest.lstrip("-").isdigit() or not subject:
        return None
    return subject, operator, int(rest)


def exclusive(first: tuple[str, bool], second: tuple[str, bool]) -> bool:
    """Whether two tests (`test_key`s with the value each takes) of one unchanged subject cannot both
    hold: `len(ids) > 1` true and `len(ids) == 1` true. Integer comparisons only; the candidates
    around each bound decide it, since the truth of both changes only there."""
    a, b = _integer_bound(first[0]), _integer_bound(second[0])
    if a is None or b is None or a[0] != b[0]:
        return False
    candidates = {n + step for n in (a[2], b[2]) for step in (-1, 0, 1)} | {min(a[2], b[2]) - 2, max(a[2], b[2]) + 2}
    return not any(
        _ORDERS[a[1]](value, a[2]) == first[1] and _ORDERS[b[1]](value, b[2]) == second[1] for value in candidates
    )


def tests_around(body: Iterable[cst.CSTNode], nodes: Collection[cst.CSTNode]) -> list[str]:
    """The unchanged tests (by `test_key`) of the `if` statements and conditional expressions (`a if c else
    b`) that hold one of `nodes` in an arm, in order: `bn = self.bn(x) if self.with_bn else x` saves `x`
    only where `self.with_bn` holds, and only where it does not is `bn` the tensor `x`."""
    finder = _Around({id(node) for node in nodes})
    for statement in body:
        finder.walk(statement)
    around = []
    for key, places in finder.tests:
        if key not in around and not any(_changed(place, finder.assigned) for place in places):
            around.append(key)
    return around[:MAX_TESTS]


class LoopInvariants:
    """The tests every pass of a loop answers alike: a keyed test (`test_key`) of places that nothing in the
    loop, its target included, assigns, deletes or loops over (`if n_gpus:`, `if not args.keep_cache:`)."""

    def __init__(self, loop: cst.For | cst.While) -> None:
        finder = _Tests()
        finder.walk(loop)
        self._assigned = finder.assigned

    def holds(self, test: cst.BaseExpression) -> bool:
        return test_key(test) is not None and not any(_changed(place, self._assigned) for place in _Places.of(test))


def feasible_pairs(
    runs: dict[str, tuple[set[tuple[int, int]], set[tuple[int, int]]]],
) -> Callable[[tuple[int, int]], bool]:
    """Whether a (write, read) pair is reached, given each test's two analyses' pairs (true, false)."""

    def reached(pair: tuple[int, int]) -> bool:
        return all(pair in when_true or pair in when_false for when_true, when_false in runs.values())

    return reached


def _changed(place: str, assigned: set[str]) -> bool:
    parts = place.split(".")
    return any(".".join(parts[:end]) in assigned for end in range(1, len(parts) + 1))


def _literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    return isinstance(node, _LITERALS)


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


class _Tests(Walker):
    """The keyed `if` tests of one scope (nested functions and classes are scopes of their own), with
    the places each reads, and every place the scope binds anew. With `setup`, a binding made once before
    the first test (a statement of the body itself, in no loop or other block) changes nothing it tests:
    `device_ids = prepare(n)` before `if len(device_ids) > 1:` ... `if len(device_ids) == 1:`."""

    def __init__(self, setup: bool = False) -> None:
        self.tests: list[tuple[str, frozenset[str]]] = []
        self.assigned: set[str] = set()
        self._setup = setup
        self._nesting = 0  # compound statements around the walk

    def visit_For(self, node: cst.For) -> None:
        self._nesting += 1
        self._bind(node.target)

    def leave_For(self, node: cst.For) -> None:
        self._nesting -= 1

    def visit_While(self, node: cst.While) -> None:
        self._nesting += 1

    def leave_While(self, node: cst.While) -> None:
        self._nesting -= 1

    def visit_With(self, node: cst.With) -> None:
        self._nesting += 1

    def leave_With(self, node: cst.With) -> None:
        self._nesting -= 1

    def visit_Try(self, node: cst.Try) -> None:
        self._nesting += 1

    def leave_Try(self, node: cst.Try) -> None:
        self._nesting -= 1

    def leave_If(self, node: cst.If) -> None:
        self._nesting -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.assigned.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.assigned.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_If(self, node: cst.If) -> None:
        self._nesting += 1
        key = test_key(node.test)
        if key is not None:
            self.tests.append((key[0], frozenset(_Places.of(node.test))))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and (place := dotted_name(func.value)) is not None:
            self.assigned.add(f"len({place})")  # `ids.append(i)` changes `len(ids)`, and only that

    def visit_Global(self, node: cst.Global) -> None:
        self.assigned.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.assigned.update(item.name.value for item in node.names)

    def _bind(self, target: cst.BaseExpression) -> None:
        if self._setup and not self.tests and not self._nesting:
            return  # run once, before any test reads it
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)
        elif isinstance(target, cst.Subscript):
            self._bind(target.value)  # `args["x"] = 1` changes what `args` holds
        elif (place := dotted_name(target)) is not None:
            self.assigned.add(place)


class _Places(Walker):
    """The dotted places an expression reads (`args.use_lora`, `model`)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    @classmethod
    def of(cls, node: cst.CSTNode) -> set[str]:
        places = cls()
        places.walk(node)
        return places.found

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        place = dotted_name(node)
        if place is not None:
            self.found.add(place)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in ("True", "False", "None"):
            self.found.add(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        if (subject := _subject(node)) is not None:
            self.found.add(subject)  # `len(ids)`, which `ids.append(i)` changes


class _Around(_Tests):
    """The keyed tests whose arms hold one of the given nodes (by id), and every place the scope binds."""

    def __init__(self, nodes: set[int]) -> None:
        super().__init__()
        self.nodes = nodes
        self.enclosing: list[tuple[str, frozenset[str]]] = []

    def walk(self, node: cst.CSTNode) -> None:
        if id(node) in self.nodes:
            self.tests.extend(self.enclosing)
        super().walk(node)

    def visit_If(self, node: cst.If) -> bool:
        self._arms(node.test, (node.body, node.orelse))
        return False

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        self._arms(node.test, (node.body, node.orelse))
        return False

    def _arms(self, test: cst.BaseExpression, arms: tuple[cst.CSTNode | None, ...]) -> None:
        self.walk(test)
        key = test_key(test)
        if key is not None:
            self.enclosing.append((key[0], frozenset(_Places.of(test))))
        for arm in arms:
            if arm is not None:
                self.walk(arm)
        if key is not None:
            self.enclosing.pop()


def last_pass_tests(loop: cst.For) -> dict[str, bool]:
    """What tests of the loop's index are on its last pass, which is the state the loop exits with:
    `for i in range(n)` (or `range(a, n)`, `for i, x in enumerate(xs)` with n = `len(xs)`) ends with
    `i == n - 1`, so `if i != n - 1: x = relu(x)` did not run on it. Keyed by the test's text without spaces."""
    target, stop = _index_and_stop(loop)
    if target is None or stop is None:
        return {}
    last = f"{stop}-1"
    holds = {f"{target}=={last}", f"{target}>={last}", f"{target}+1=={stop}", f"{target}+1>={stop}"}
    fails = {f"{target}!={last}", f"{target}<{last}", f"{target}+1!={stop}", f"{target}+1<{stop}"}
    tests = {**dict.fromkeys(holds, True), **dict.fromkeys(fails, False)}
    finder = _IndexTests(tests)  # most loops test no such thing: no pass is spent on them
    finder.walk(loop.body)
    return tests if finder.found else {}


def spaceless(node: cst.CSTNode) -> str:
    return "".join(_code(node).split())


def _index_and_stop(loop: cst.For) -> tuple[str | None, str | None]:
    iterated = loop.iter
    if not isinstance(iterated, cst.Call) or any(arg.keyword or arg.star for arg in iterated.args):
        return None, None
    name = dotted_name(iterated.func)
    if name == "range" and len(iterated.args) in (1, 2) and isinstance(loop.target, cst.Name):
        return loop.target.value, spaceless(iterated.args[-1].value)
    if (
        name == "enumerate"
        and len(iterated.args) == 1
        and isinstance(loop.target, cst.Tuple)
        and len(loop.target.elements) == 2
        and isinstance(index := loop.target.elements[0].value, cst.Name)
    ):
        return index.value, f"len({spaceless(iterated.args[0].value)})"
    return None, None


class _IndexTests(Walker):
    """Whether an `if` or a conditional expression tests one of `tests` (texts without spaces)."""

    def __init__(self, tests: dict[str, bool]) -> None:
        self.tests = tests
        self.found = False

    def visit_If(self, node: cst.If) -> None:
        self._test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._test(node.test)

    def _test(self, test: cst.BaseExpression) -> None:
        if not self.found and isinstance(test, cst.Comparison):
            self.found = spaceless(test) in self.tests
