"""The fast path: libcst parses only the scopes the active rules can flag.

Building libcst's tree is most of a cold run. A rule that sets `scope_triggers` promises
that each of its findings lies in a scope (the module's own statements, a top-level
function, a method) whose source shows one of those triggers (a pattern, an `AllOf`
patterns, or `STORES`). When every active rule promises so, CPython's parser (about a tenth of libcst's cost) finds the scopes, and libcst gets
the kept lines verbatim, with every other scope hollowed out to what the kept scopes
read from it:

- every import, in its original order (the import table is module-wide, read in order);
- a stub binding the name of a hollowed top-level function or class;
- class headers and class-level statements, when the module's statements are kept
  (they belong to the module scope); a class whose source matches `CLASS_LINKS` stays
  whole, because its methods share what `__init__` builds (an `inplace` module);
- any scope that mentions a kept top-level function by name (calling a function that
  writes its argument is a write in the caller, and confirms that function's finding), and
  its callers in turn, as many calls up as the model follows (semantic/call_depth.py);
- a class that a kept scope names, whole, and in turn the classes its methods name: what
  `model = Net()` holds (`model.fc.weight`, a Parameter) comes from `Net.__init__`;
- a name imported under an alias counts as the name it stands for (`zeros_ as z`).

`Reduction.origin` maps each line back to the file, so positions, `# noqa` and fixes are
those of the full parse. When CPython rejects the file the engine parses it in full, as
before, and reports exactly what it always did.
"""

from __future__ import annotations

import ast
import re
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import TYPE_CHECKING

from gpumem_lint import collector
from gpumem_lint.semantic.call_depth import FOLLOWED_CALLS

if TYPE_CHECKING:
    from gpumem_lint.rules.base import Rule

#: Class text that links its methods to each other in the shared semantic model
#: (scopes.py: `self.act = nn.ReLU(inplace=True)` in `__init__` makes `self.act(x)` a write in `forward`;
#: class_facts.py: `self.w = nn.Parameter(...)`, `self.fc = nn.Linear(...)`, `register_buffer`, `x.expand(...)`
#: say what `self.w`, `self.fc.weight` hold in every method).
CLASS_LINKS = re.compile(
    r"inplace|Parameter|register_(?:parameter|buffer)|=\s*(?:torch\.)?nn\.[A-Z]|\.expand(?:_as)?\(|broadcast_to\("
)

#: A function whose result its callers are judged by (semantic/summaries.py): it returns an
#: `expand` view, the outputs of one split, a new Parameter or a tensor it made require grad.
#: Kept when a kept scope names it.
SUMMARY_LINKS = re.compile(r"\.expand(?:_as)?\(|broadcast_to\(|\.chunk\(|split\(|unbind\(|Parameter\(|requires_grad")
_RETURN = re.compile(r"\breturn\b")

#: Off: every file is parsed in full (bench/fast_path_equality.py compares the two).
enabled = True

_LINE_BREAK = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")  # where CPython counts a new line
#: Characters str.splitlines() breaks at and CPython does not (and "\r", which both treat alike but rarely occurs).
_UNUSUAL_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_DEF_NAME = re.compile(r"\bdef\s+(\w+)")
_WORD_BEFORE = re.compile(r"(\w+)\s*\Z")
_WORD_AFTER = re.compile(r"\s*(\w+)")
#: Where a statement holds statements, in source order (`handlers` and `cases` hold clauses with a body).
_BLOCKS = ("body", "handlers", "cases", "orelse", "finalbody")
_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)
#: What calling an object of a class runs (semantic/class_facts.py `called_method`).
_CALLED_METHODS = ("__call__", "forward")
_IMPORT = (ast.Import, ast.ImportFrom)


def _passes_own_value_to(function: ast.FunctionDef | ast.AsyncFunctionDef, callees: set[str]) -> bool:
    """Whether `function` calls one of `callees` with a value of its own: a parameter or a local
    made from one (`f(t)`, `norm(resized)` in `def g(t)`), not only globals and constants."""
    arguments = function.args
    own = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    calls = []
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in callees:
            calls.append(node)
    return any(
        isinstance(name, ast.Name) and name.id in own
        for call in calls
        for value in (*call.args, *(keyword.value for keyword in call.keywords))
        for name in ast.walk(value)
    )


def _binds_object(node: ast.stmt, classes: set[str]) -> bool:
    """`norm = Normalize(...)` for one of `classes`."""
    return (
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id in classes
    )


def cpython_tree(text: str) -> ast.Module | None:
    """CPython's tree of a module (about a tenth of libcst's cost), or None when CPython rejects it."""
    try:
        with warnings.catch_warnings(), collector.paused():  # CPython's SyntaxWarnings are not ours to print
            warnings.simplefilter("ignore")
            return compile(text, "<gpumem-lint>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def ast_blocks(statement: ast.AST) -> Iterator[list[ast.stmt]]:
    """The blocks of statements a statement of CPython's tree holds, in source order."""
    for name in _BLOCKS:
        block = getattr(statement, name, None)
        if block and name in ("handlers", "cases"):
            yield from (clause.body for clause in block)
        elif block:
            yield block


def ast_statements(tree: ast.Module) -> list[ast.stmt]:
    """Every statement of CPython's tree; expressions are never entered (they hold none)."""
    found: list[ast.stmt] = []
    pending: list[list[ast.stmt]] = [tree.body]
    while pending:
        for statement in pending.pop():
            found.append(statement)
            pending.extend(ast_blocks(statement))
    return found


class AllOf:
    """A scope trigger that needs every one of its patterns in the same scope (the rarest first:
    the rest are looked for only in the scopes that show it)."""

    def __init__(self, *patterns: re.Pattern[str]) -> None:
        self.patterns = patterns


class Stores:
    """A scope trigger: statements that store into a subscript (also as a `for`, `with` or tuple
    target) or augment a target (`x += y`), found in CPython's tree rather than in the text."""

    def lines(self, tree: ast.Module) -> set[int]:
        return {node.lineno for node in ast_statements(tree) if _stores(node)}


STORES = Stores()
Trigger = re.Pattern[str] | AllOf | Stores


@dataclass
class Reduction:
    text: str
    #: origin[i] is the file's line number of line i + 1 of `text`.
    origin: list[int]


def reduce_source(text: str, rules: Sequence[type[Rule]]) -> Reduction | None:
    """The source libcst needs for these rules, or None when it needs the whole file."""
    if not enabled or any(rule.scope_triggers is None for rule in rules):
        return None
    triggers = {trigger for rule in rules for trigger in rule.scope_triggers or ()}
    tree = cpython_tree(text)
    if tree is None:
        return None
    lines = _Lines(text)
    return _Reducer(lines, tree, _Triggers(lines, tree, triggers)).run()


class _Lines:
    """The file's lines, as CPython counts them, and which lines a pattern's matches touch."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text)
        self.starts = list(accumulate(map(len, self.lines), initial=0))
        self.scanned = "\n" + text  # so that a pattern anchored on "\n" sees line 1 too

    def touched(self, pattern: re.Pattern[str]) -> set[int]:
        """Every line some match of pattern touches (a match in a line's scope makes it a candidate)."""
        found: set[int] = set()
        for match in pattern.finditer(self.scanned):
            first = self._line(match.start() - 1)
            found.update(range(first, self._line(match.end() - 2) + 1))
        return found

    def words(self, words: set[str]) -> Iterator[tuple[int, str]]:
        """(line, word) of every occurrence of these words."""
        for match in _words(words).finditer(self.scanned):
            yield self._line(match.start() - 1), match.group()

    def _line(self, offset: int) -> int:
        return max(1, bisect_right(self.starts, offset))

    def shows(self, pattern: re.Pattern[str], start: int, end: int) -> bool:
        """Whether a match of pattern lies in lines start to end (a pattern rarely found in a file
        is searched whole by `touched`; one found everywhere, only where it is needed)."""
        return pattern.search(self.scanned, self.starts[start - 1] + 1, self.starts[end] + 1) is not None

    def text_of(self, start: int, end: int) -> str:
        return "".join(self.lines[start - 1 : end])


class _Triggers:
    """Which lines hold what any active rule's scope triggers look for."""

    def __init__(self, lines: _Lines, tree: ast.Module, triggers: Iterable[Trigger]) -> None:
        touched: set[int] = set()
        self.source = lines
        #: Of each `AllOf`: the lines its first pattern touches, and the rest, looked for scope by scope.
        self.conjunctions: list[tuple[list[int], tuple[re.Pattern[str], ...]]] = []
        patterns: list[re.Pattern[str]] = []
        for trigger in triggers:
            if isinstance(trigger, Stores):
                touched |= trigger.lines(tree)
            elif isinstance(trigger, AllOf):
                first = sorted(lines.touched(trigger.patterns[0]))
                if first:  # else no scope shows them all
                    self.conjunctions.append((first, trigger.patterns[1:]))
            else:
                touched |= lines.touched(trigger)
                patterns.append(trigger)
        # `from torch import relu_ as r`: `r(x)` writes as `relu_(x)` would.
        aliases = {local for original, local in _aliases(lines.text) if any(p.search(f"{original}(") for p in patterns)}
        if aliases:
            touched |= lines.touched(_words(aliases))
        self.lines = sorted(touched)

    def __call__(self, *spans: tuple[int, int]) -> bool:
        """Whether the scope made of these line spans shows a trigger."""
        return any(_any_between(self.lines, *span) for span in spans) or any(
            any(_any_between(first, *span) for span in spans)
            and all(any(self.source.shows(pattern, *span) for span in spans) for pattern in rest)
            for first, rest in self.conjunctions
        )


def _stores(node: ast.AST) -> bool:
    if isinstance(node, ast.AugAssign):
        return True
    if isinstance(node, ast.Assign):
        return any(_stored_into(target) for target in node.targets)
    if isinstance(node, ast.AnnAssign):
        return node.value is not None and _stored_into(node.target)
    if isinstance(node, ast.For | ast.AsyncFor):
        return _stored_into(node.target)
    if isinstance(node, ast.With | ast.AsyncWith):
        return any(item.optional_vars is not None and _stored_into(item.optional_vars) for item in node.items)
    return False


def _stored_into(target: ast.expr) -> bool:
    if isinstance(target, ast.Tuple | ast.List):
        return any(_stored_into(element) for element in target.elts)
    if isinstance(target, ast.Starred):
        return _stored_into(target.value)
    return isinstance(target, ast.Subscript)


def _any_between(lines: list[int], start: int, end: int) -> bool:
    index = bisect_left(lines, start)
    return index < len(lines) and lines[index] <= end


def _aliases(text: str) -> list[tuple[str, str]]:
    """(name, local name) of every `name as local` in the text: `import x as y`, also `with`, `except`."""
    found = []
    at = text.find(" as ")
    while at != -1:
        before, after = _WORD_BEFORE.search(text, max(0, at - 200), at + 1), _WORD_AFTER.match(text, at + 3)
        if before is not None and after is not None:
            found.append((before.group(1), after.group(1)))
        at = text.find(" as ", at + 3)
    return found


def split_lines(text: str) -> list[str]:
    if _UNUSUAL_BREAKS.search(text) is None:
        return text.splitlines(keepends=True)  # the same lines, much faster
    return _LINE_BREAK.split(text)


@dataclass
class _Unit:
    """One top-level statement (or several sharing a line), or one statement of a class body."""

    nodes: list[ast.stmt]
    start: int
    end: int
    kept: bool = False
    members: list[_Unit] = field(default_factory=list)  # a class's body, when it is not kept whole

    @property
    def node(self) -> ast.stmt:
        return self.nodes[0]

    @property
    def is_function(self) -> bool:
        return len(self.nodes) == 1 and isinstance(self.node, _FUNCTION)

    @property
    def is_class(self) -> bool:
        return len(self.nodes) == 1 and isinstance(self.node, ast.ClassDef)

    @property
    def is_statement(self) -> bool:
        """Part of the module's (or the class's) own flow of statements."""
        return not (self.is_function or self.is_class or self.is_import)

    @property
    def is_import(self) -> bool:
        return all(isinstance(node, _IMPORT) for node in self.nodes)


class _Reducer:
    def __init__(self, lines: _Lines, tree: ast.Module, triggers: _Triggers) -> None:
        self.index = lines
        self.lines = lines.lines
        self.triggers = triggers
        self.units = _units(tree.body)
        self.out: list[str] = []
        self.origin: list[int] = []

    def text(self, start: int, end: int) -> str:
        return self.index.text_of(start, end)

    def hit(self, unit: _Unit) -> bool:
        return self.triggers((unit.start, unit.end))

    def source(self, unit: _Unit) -> str:
        return self.text(unit.start, unit.end)

    def run(self) -> Reduction | None:
        self.class_links = sorted(self.index.touched(CLASS_LINKS))
        # The module's statements are one scope (a trigger's parts may lie in different statements).
        self.body_kept = self.triggers(*((unit.start, unit.end) for unit in self.units if unit.is_statement))
        for unit in self.units:
            self._select(unit)
        self._close_over_calls()
        self._keep_built_classes()
        if all(unit.kept or unit.is_import for unit in self.units):
            return None  # nothing to hollow out: parse the file as it is
        for unit in self.units:
            self._emit(unit)
        return Reduction("".join(self.out), self.origin)

    def _select(self, unit: _Unit) -> None:
        if unit.is_import:
            return
        if unit.is_statement:
            unit.kept = self.body_kept
        elif unit.is_function:
            unit.kept = self.hit(unit)
        elif not _has_separate_body(unit.node):
            unit.kept = self.hit(unit)  # `class A: x = 1`: whole or nothing
        else:
            unit.members = _units(unit.node.body)
            for member in unit.members:
                # Class-level statements run in the module scope: kept with the module's statements.
                member.kept = self.hit(member) or (self.body_kept and not member.is_function)
            if any(member.kept for member in unit.members) and _any_between(self.class_links, unit.start, unit.end):
                for member in unit.members:
                    member.kept = True
            self._settle(unit)

    def _settle(self, unit: _Unit) -> None:
        if unit.members and all(member.kept for member in unit.members):
            unit.kept, unit.members = True, []

    def _keep_summarised_callees(self) -> None:
        """Functions and methods whose returned value a kept scope that names them is judged by."""
        candidates: dict[str, list[_Unit]] = {}
        for unit in self.units:
            for scope in unit.members or [unit]:
                if scope.is_function and not scope.kept:
                    text = self.source(scope)
                    if _RETURN.search(text) and SUMMARY_LINKS.search(text):
                        candidates.setdefault(scope.node.name, []).append(scope)
        if not candidates:
            return
        kept = [scope for unit in self.units for scope in unit.members or [unit] if scope.kept]
        for line, name in self.index.words(set(candidates)):
            if any(scope.start <= line <= scope.end for scope in kept):
                for scope in candidates.pop(name, ()):
                    scope.kept = True
        for unit in self.units:
            self._settle(unit)

    def _close_over_calls(self) -> None:
        """Scopes that call a kept top-level function are kept too; and the callers of a function
        kept so that passes its own parameter on to one (`show(t)` calls `denormalize(t)`), as
        many calls up as the model follows a caller's tensors (`main` -> `show` -> `denormalize`)."""
        followed: set[str] = set()
        for depth in range(FOLLOWED_CALLS):
            self._keep_summarised_callees()  # what a newly kept caller's calls return
            names = {
                unit.node.name
                for unit in self.units
                if unit.is_function and unit.kept and unit.node.name not in followed
                and (depth == 0 or _passes_own_value_to(unit.node, followed))
            }
            names |= self._keep_object_bindings() - followed
            if self.body_kept and depth == 0:  # functions defined under a module-level `if` or `try`
                for unit in self.units:
                    if unit.is_statement:
                        names.update(_DEF_NAME.findall(self.source(unit)))
            if not names:
                break
            followed |= names
            mentions = sorted(self.index.touched(_words(names)))
            for unit in self.units:
                for scope in unit.members or [unit]:
                    if not scope.kept and not scope.is_import and _any_between(mentions, scope.start, scope.end):
                        scope.kept = True
                self._settle(unit)
            self._keep_whole_body()

    def _keep_object_bindings(self) -> set[str]:
        """Module-level names bound to an object of a class whose `__call__` or `forward` is kept
        (`norm = Normalize(...)`): calling `norm` runs that method. The binding statements are kept,
        since they say what the name holds (semantic/class_facts.py `instances`)."""
        classes = {
            unit.node.name
            for unit in self.units
            if unit.is_class
            and (
                (unit.kept and not unit.members)
                or any(m.kept and m.is_function and m.node.name in _CALLED_METHODS for m in unit.members)
            )
        }
        bound: set[str] = set()
        for unit in self.units:
            if not (classes and unit.is_statement):
                continue
            for node in unit.nodes:
                if _binds_object(node, classes):
                    bound.update(target.id for target in node.targets if isinstance(target, ast.Name))
                    unit.kept = True
        return bound

    def _keep_whole_body(self) -> None:
        """The module's statements are one flow: all of them, and the class-level ones, or none."""
        if self.body_kept or not any(unit.is_statement and unit.kept for unit in self.units):
            return
        self.body_kept = True
        for unit in self.units:
            unit.kept = unit.kept or unit.is_statement
            for member in unit.members:
                member.kept = member.kept or not member.is_function
            self._settle(unit)

    def _keep_built_classes(self) -> None:
        """Classes whose attribute facts a kept scope relies on by naming them (`model = Net()`, then
        `model.fc.weight`), and in turn those their methods name (`self.encoder = Encoder()`)."""
        pending = {unit.node.name: unit for unit in self.units if unit.is_class and not unit.kept}
        while pending:
            kept = [scope for unit in self.units for scope in unit.members or [unit] if scope.kept]
            named = {name for line, name in self.index.words(set(pending)) if any(s.start <= line <= s.end for s in kept)}
            if not named:
                return
            for name in named:
                unit = pending.pop(name)
                unit.kept, unit.members = True, []

    # -------------------------------------------------------------- output

    def _emit(self, unit: _Unit) -> None:
        if unit.kept or unit.is_import:
            self._verbatim(unit.start, unit.end)
        elif unit.members:
            self._class_skeleton(unit)
        elif unit.is_statement:
            self._synthetic(self._imports(unit.nodes), unit.start)
        else:  # a stub: the module's flow still sees the name bound
            header = f"class {unit.node.name}:" if unit.is_class else f"def {unit.node.name}():"
            body = self._imports(unit.nodes) or ["pass"]
            self._synthetic([header, *("    " + line for line in body)], unit.start)

    def _class_skeleton(self, unit: _Unit) -> None:
        first = unit.members[0].start
        self._verbatim(unit.start, first - 1)
        indent = _indentation(self.lines[first - 1])
        emitted = False
        for member in unit.members:
            if member.kept:
                self._verbatim(member.start, member.end)
                emitted = True
            else:
                imports = self._imports(member.nodes)
                self._synthetic([indent + line for line in imports], member.start)
                emitted = emitted or bool(imports)
        if not emitted:
            self._synthetic([indent + "pass"], unit.start)

    def _verbatim(self, start: int, end: int) -> None:
        if end < start:
            return
        chunk = self.lines[start - 1 : end]
        if not chunk[-1].endswith(("\n", "\r")):
            chunk[-1] += "\n"  # the file's last line, now followed by more
        self.out.extend(chunk)
        self.origin.extend(range(start, end + 1))

    def _synthetic(self, lines: list[str], origin: int) -> None:
        for line in lines:
            self.out.append(line + "\n")
            self.origin.extend([origin] * len(_LINE_BREAK.split(line)))

    def _imports(self, nodes: list[ast.stmt]) -> list[str]:
        """The import statements nested in these statements, in source order."""
        found: list[ast.stmt] = []
        for node in nodes:
            if "import" in self.text(node.lineno, node.end_lineno or node.lineno):
                found.extend(child for child in ast.walk(node) if isinstance(child, _IMPORT))
        found.sort(key=lambda child: (child.lineno, child.col_offset))
        return [self._segment(child) for child in found]

    def _segment(self, node: ast.stmt) -> str:
        """A statement's exact source; ast columns count UTF-8 bytes."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        if first == last:
            return self.lines[first].encode()[node.col_offset : node.end_col_offset].decode()
        head = self.lines[first].encode()[node.col_offset :].decode()
        tail = self.lines[last].encode()[: node.end_col_offset].decode()
        return head + "".join(self.lines[first + 1 : last]) + tail


def _has_separate_body(node: ast.ClassDef) -> bool:
    """Whether the class body starts on a line of its own, after the whole header."""
    header = [node.lineno, *(part.end_lineno or part.lineno for part in (*node.bases, *node.keywords))]
    first = node.body[0]
    return min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", ()))]) > max(header)


def _words(words: set[str]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(sorted(words)) + r")\b")


def _units(statements: list[ast.stmt]) -> list[_Unit]:
    units: list[_Unit] = []
    for node in statements:
        decorators = getattr(node, "decorator_list", ())
        start = min([node.lineno, *(d.lineno for d in decorators)])
        end = node.end_lineno or node.lineno
        if units and start <= units[-1].end:  # `import a; x = 1` share a line
            units[-1].nodes.append(node)
            units[-1].end = max(units[-1].end, end)
        else:
            units.append(_Unit([node], start, end))
    return units


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]
