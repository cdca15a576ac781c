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
  (they belong to the module scope); in a class with a kept method, or that a kept scope
  names, the methods that say what its instances hold (`self.fc = nn.Linear(...)`,
  `register_buffer`, a grad switch) and those that use an attribute holding an `inplace`
  module or an Embedding given `max_norm` (calling it is a write); a method that only reads `self.*` is not needed to judge another;
- any scope that mentions a kept top-level function by name (calling a function that
  writes its argument is a write in the caller, and confirms that function's finding), and
  its callers in turn, as many calls up as the model follows (semantic/call_depth.py); so too
  a method that calls a kept method of its class (`self.reg(x)`);
- a class that a kept scope names, as above, and in turn the classes its kept methods name:
  what `model = Net()` holds (`model.fc.weight`, a Parameter) comes from `Net.__init__`;
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
from functools import cache
from itertools import accumulate
from typing import TYPE_CHECKING

from gpumem_lint import collector
from gpumem_lint.semantic.call_depth import FOLLOWED_CALLS

if TYPE_CHECKING:
    from gpumem_lint.rules.base import Rule

#: A function whose result its callers are judged by (semantic/summaries.py): it returns an
#: `expand` view, the outputs of one split, a new Parameter or a tensor it made require grad,
#: host memory (`.cpu()`, a CPU load); or a container of layers (`return nn.Sequential(*layers)`,
#: class_facts.py). Kept when a kept scope names it.
SUMMARY_LINKS = tuple(
    ".expand( .expand_as( broadcast_to( .chunk( split( unbind( Parameter( requires_grad .cpu( map_location "
    "Sequential( ModuleList( ModuleDict( ParameterList( ParameterDict(".split()
)


@cache
def _summary_links() -> tuple[str, ...]:
    """SUMMARY_LINKS, and the calls a returned plain view of a parameter is summarised from (`x.view(`,
    `torch.narrow(`); a short name only after a dot (`.t(`), where it is a method or `torch.t(`."""
    from gpumem_lint.semantic.summaries import view_call_names

    views = (f".{name}(" if len(name) <= 2 else f"{name}(" for name in sorted(view_call_names()))
    return (*SUMMARY_LINKS, *views)


@cache
def _output_links() -> tuple[str, ...]:
    """The calls of ops and modules that keep their output for backward (`relu(`, `nn.Sigmoid(`): a function
    returning what one made is summarised (semantic/summaries.py `saved_output`)."""
    from gpumem_lint.knowledge.autograd import saved_for_backward

    table = saved_for_backward()
    modules = {name.split(".")[0] for name in table.modules if "output" in table.module_saves(name)}
    ops = {name.removesuffix(".inplace").rsplit(".", 1)[-1] for name, op in table.ops.items() if 0 in op.outputs_kept()}
    return tuple(sorted(f"{name}(" if name.isidentifier() else name for name in modules | ops))


@cache
def _module_write_keywords() -> tuple[str, ...]:
    """Constructor keywords that make calling a module a write: `nn.ReLU(inplace=True)` writes its input,
    `nn.Embedding(n, d, max_norm=1.0)` its own weight (aliasing.toml [renorming_calls])."""
    from gpumem_lint.knowledge import knowledge

    return ("inplace", knowledge().renorming_keyword)


#: Off: every file is parsed in full (bench/fast_path_equality.py compares the two).
enabled = True

_LINE_BREAK = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")  # where CPython counts a new line
#: Characters str.splitlines() breaks at and CPython does not (and "\r", which both treat alike but rarely occurs).
_UNUSUAL_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_DEF_NAME = re.compile(r"\bdef\s+(\w+)")
_WORD_BEFORE = re.compile(r"(\w+)\s*\Z")
_WORD_AFTER = re.compile(r"\s*(\w+)")
_ASCII_WORD = re.compile(r"[A-Za-z0-9_]+")
#: A pattern that is only words, one or another (`state_dict|parameters|buffers`).
_WORDS_OR_WORDS = re.compile(r"\w+(?:\|\w+)*")
#: Where a statement holds statements, in source order (`handlers` and `cases` hold clauses with a body).
_BLOCKS = ("body", "handlers", "cases", "orelse", "finalbody")
#: Of each compound statement, the fields of `_BLOCKS` it has (a statement of another type holds none).
_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {
    **dict.fromkeys((ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With, ast.AsyncWith), ("body",)),
    **dict.fromkeys((ast.If, ast.For, ast.AsyncFor, ast.While), ("body", "orelse")),
    **dict.fromkeys(
        filter(None, (ast.Try, getattr(ast, "TryStar", None))), ("body", "handlers", "orelse", "finalbody")
    ),
    ast.Match: ("cases",),
}
_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)
_Function = ast.FunctionDef | ast.AsyncFunctionDef
#: What calling an object of a class runs (semantic/class_facts.py `called_method`).
_CALLED_METHODS = ("__call__", "forward")
_IMPORT = (ast.Import, ast.ImportFrom)
_DEFINITIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
#: Text of a method that states what its class's instances hold (`register_buffer`), or that may
#: turn grad off module-wide (`p.requires_grad_(False)`, `p.requires_grad = False`).
#: Calls that state what an instance holds: a registered tensor, a grad switch, a layer appended to a module list.
_FACT_CALLS = re.compile(r"register_(?:parameter|buffer)|requires_grad|\bself\s*\.\s*\w+\s*\.\s*append\s*\(")


def _passes_own_value_to(unit: _Unit, callees: set[str], source: _Lines) -> bool:
    """Whether a top-level function calls one of `callees` with a value of its own: a parameter or a
    local made from one (`f(t)`, `norm(resized)` in `def g(t)`), not only globals and constants. Only
    the statements that show a callee's name, then an argument's, are walked."""
    function = unit.node
    arguments = function.args
    calls = [
        node
        for node in _walk_near(function, source.mentions(callees, unit.start, unit.end))
        if type(node) is ast.Call and isinstance(node.func, ast.Name) and node.func.id in callees
    ]
    passed = {
        name.id
        for call in calls
        for value in (*call.args, *(keyword.value for keyword in call.keywords))
        for name in ast.walk(value)
        if isinstance(name, ast.Name)
    }
    if not passed:
        return False
    if any(a.arg in passed for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)):
        return True
    return any(
        type(node) is ast.Name and isinstance(node.ctx, ast.Store) and node.id in passed
        for node in _walk_near(function, source.mentions(passed, unit.start, unit.end))
    )


def _walk_near(root: ast.AST, mentions: list[int] | None) -> Iterator[ast.AST]:
    """Every node under root, as `ast.walk` finds them, but the statements that span none of these
    lines (None: every statement)."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if mentions is None or not isinstance(child, ast.stmt) or _any_between(mentions, *_span(child)):
                pending.append(child)


def _binds_object(node: ast.stmt, classes: set[str]) -> bool:
    """`norm = Normalize(...)` for one of `classes`."""
    return isinstance(node, ast.Assign) and _constructs(node.value, classes)


def _calls_new_object(node: ast.AST, classes: set[str]) -> bool:
    """`Denormalize(mean, std)(t)` for one of `classes`: the object is made and called at once."""
    return isinstance(node, ast.Call) and _constructs(node.func, classes)


def _constructs(node: ast.expr, classes: set[str]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes


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
    names = _BLOCK_FIELDS.get(type(statement))
    if names is None:
        if isinstance(statement, ast.stmt):
            return  # a simple statement
        names = _BLOCKS
    for name in names:
        block = getattr(statement, name, None)
        if block and name in ("handlers", "cases"):
            yield from (clause.body for clause in block)
        elif block:
            yield block


def ast_statements(tree: ast.Module | _Function | ast.ClassDef) -> list[ast.stmt]:
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
    target) or augment a target (`x += y`), found in CPython's tree rather than in the text. An
    assignment into an item of a name its scope binds only to lists, dicts and sets (`out[i] = y`
    after `out = []`) is not one: flow.py writes only into an array."""

    def lines(self, scan: _Scan, source: _Lines) -> set[int]:
        containers: dict[tuple[int, str], bool] = {}  # (function, name): bound only to containers there
        found = set()
        for scope, node in scan.stores:
            bases = _item_store_bases(node)
            if bases and scope is not None:  # in a function
                for name in bases:
                    if (id(scope), name) not in containers:
                        containers[id(scope), name] = _shows_container_binding(source, scope, name) and (
                            _only_container(scope, name, scan.declared, source)
                        )
                if all(containers[id(scope), name] for name in bases):
                    continue
            found.add(node.lineno)
        return found


STORES = Stores()
Trigger = re.Pattern[str] | AllOf | Stores


@dataclass
class Reduction:
    text: str
    #: origin[i] is the file's line number of line i + 1 of `text`.
    origin: list[int]


class _Scan:
    """One pass over CPython's statements answers what the fast path asks of its tree: the statements
    that store into a subscript or augment a target (with the function whose names they bind), the
    names declared `global` or `nonlocal`, the import statements, the lines of the statements that
    assign `self.<name>`, and the `self.<name>` assigned a module that may be `inplace`. Expressions
    are entered only below an assignment's targets (and the keywords of a call it assigns)."""

    def __init__(self, tree: ast.Module, inplace: tuple[str, ...]) -> None:
        #: (the function whose names it binds, or None at module level and in a class body; the statement).
        self.stores: list[tuple[_Function | None, ast.stmt]] = []
        self.declared: set[str] = set()
        self.imports: list[ast.stmt] = []
        #: The lines of the statements that assign `self.<name>` (semantic/scopes.py: a fact about the instances).
        self.self_stores: list[int] = []
        #: (line, names) of `self.<name> = Call(..., inplace=...)` (or a Sequential led by one; or `max_norm=`), for
        #: the keywords of `inplace` the file mentions.
        self.inplace: list[tuple[int, set[str]]] = []
        stores, self_stores = self.stores, self.self_stores
        pending: list[tuple[list[ast.stmt], _Function | None]] = [(tree.body, None)]
        while pending:
            block, scope = pending.pop()
            for node in block:
                kind = type(node)
                if kind is ast.Assign:
                    targets = node.targets
                    if len(targets) != 1 or type(targets[0]) is not ast.Name:  # `x = ...` stores into nothing
                        if any(map(_stored_into, targets)):
                            stores.append((scope, node))
                        if _binds_self_attribute(targets):
                            self_stores.append(node.lineno)
                        if inplace and _may_hold_inplace_module(node.value, inplace):
                            self.inplace.append((node.lineno, set(filter(None, map(_attribute_of_self, targets)))))
                elif kind is ast.Expr or kind is ast.Return or kind is ast.Pass:
                    continue
                elif kind is ast.AugAssign:
                    stores.append((scope, node))
                    if _binds_self_attribute([node.target]):
                        self_stores.append(node.lineno)
                elif kind is ast.AnnAssign:
                    if node.value is not None and _stored_into(node.target):
                        stores.append((scope, node))
                    if _binds_self_attribute([node.target]):
                        self_stores.append(node.lineno)
                elif kind is ast.Import or kind is ast.ImportFrom:
                    self.imports.append(node)
                elif kind is ast.Global or kind is ast.Nonlocal:
                    self.declared.update(node.names)
                elif kind in _BLOCK_FIELDS:
                    if kind is ast.For or kind is ast.AsyncFor:
                        if _stored_into(node.target):
                            stores.append((scope, node))
                        if _binds_self_attribute([node.target]):
                            self_stores.append(node.lineno)
                    elif kind is ast.With or kind is ast.AsyncWith:
                        bound = [item.optional_vars for item in node.items if item.optional_vars is not None]
                        if any(map(_stored_into, bound)):
                            stores.append((scope, node))
                        if _binds_self_attribute(bound):
                            self_stores.append(node.lineno)
                    inner = None if kind is ast.ClassDef else node if kind in _FUNCTION else scope
                    pending.extend((body, inner) for body in ast_blocks(node))
        self.imports.sort(key=lambda node: (node.lineno, node.col_offset))
        self.import_lines = [node.lineno for node in self.imports]
        self.self_stores.sort()

    def imports_within(self, start: int, end: int) -> list[ast.stmt]:
        """The import statements that start in lines start to end, in source order."""
        return self.imports[bisect_left(self.import_lines, start) : bisect_right(self.import_lines, end)]

    def inplace_attributes(self, start: int, end: int) -> set[str]:
        """`act` of `self.act = nn.ReLU(inplace=True)`, `self.act.fn = ...` in lines start to end
        (semantic/scopes.py `inplace_modules`)."""
        return {name for line, names in self.inplace if start <= line <= end for name in names}


def _binds_self_attribute(targets: list[ast.expr]) -> bool:
    """Whether these targets, tuples unpacked, assign `self.<name>`."""
    pending = list(targets)
    while pending:
        target = pending.pop()
        kind = type(target)
        if kind is ast.Attribute:
            if _is_self(target.value):
                return True
        elif kind is ast.Tuple or kind is ast.List:
            pending.extend(target.elts)
        elif kind is ast.Starred:
            pending.append(target.value)
    return False


def _may_hold_inplace_module(value: ast.expr | None, keywords: tuple[str, ...]) -> bool:
    """`nn.ReLU(inplace=True)` (or `nn.Embedding(..., max_norm=1.0)`), or a container whose first layer may be
    one: `nn.Sequential(nn.ReLU(inplace=True), ...)`, `nn.Sequential(*layers)` (semantic/scopes.py `_first_layer`)."""
    if not isinstance(value, ast.Call):
        return False
    if any(keyword.arg in keywords for keyword in value.keywords):
        return True
    first = value.args[0] if value.args else None
    return isinstance(first, ast.Starred) or _may_hold_inplace_module(first, keywords)


def reduce_source(text: str, rules: Sequence[type[Rule]]) -> Reduction | None:
    """The source libcst needs for these rules, or None when it needs the whole file."""
    if not enabled or any(rule.scope_triggers is None for rule in rules):
        return None
    triggers = {trigger for rule in rules for trigger in rule.scope_triggers or ()}
    tree = cpython_tree(text)
    if tree is None:
        return None
    lines = _Lines(text)
    scan = _Scan(tree, tuple(word for word in _module_write_keywords() if word in text))
    return _Reducer(lines, tree, scan, _Triggers(lines, scan, triggers)).run()


class _Lines:
    """The file's lines, as CPython counts them, and which lines a pattern's matches touch."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text)
        self.starts = list(accumulate(map(len, self.lines), initial=0))
        self.scanned = "\n" + text  # so that a pattern anchored on "\n" sees line 1 too
        self.found: dict[str, list[int]] = {}  # of each word, the lines it occurs in

    def touched(self, pattern: re.Pattern[str]) -> set[int]:
        """Every line some match of pattern touches (a match in a line's scope makes it a candidate)."""
        if pattern.flags == re.UNICODE and _WORDS_OR_WORDS.fullmatch(pattern.pattern):
            return self.holding(pattern.pattern.split("|"))  # the same lines: none of them spans two
        found: set[int] = set()
        for match in pattern.finditer(self.scanned):
            first = self._line(match.start() - 1)
            found.update(range(first, self._line(match.end() - 2) + 1))
        return found

    def holding(self, literals: Iterable[str]) -> set[int]:
        """The lines that hold one of these strings (none of them holding a line break)."""
        found: set[int] = set()
        scanned = self.scanned
        for literal in literals:
            at = scanned.find(literal)
            while at != -1:
                found.add(self._line(at - 1))
                at = scanned.find(literal, at + 1)
        return found

    def words(self, words: Iterable[str]) -> Iterator[tuple[int, str]]:
        """(line, word) of every occurrence of these words (as `\\b<word>\\b` finds it)."""
        for word in words:
            for line in self.occurrences(word):
                yield line, word

    def mentions(self, words: Iterable[str], start: int, end: int) -> list[int] | None:
        """The lines, sorted, where these words occur, when lines start to end are ASCII (a node
        naming one of them then shows it in its text); None when not (CPython normalises identifiers)."""
        if not self.scanned[self.starts[start - 1] + 1 : self.starts[end] + 1].isascii():
            return None
        return sorted({line for word in words for line in self.occurrences(word)})

    def occurrences(self, word: str) -> list[int]:
        """The line of each occurrence of a whole word, in order (string search, not a regex)."""
        found = self.found.get(word)
        if found is not None:
            return found
        if not _ASCII_WORD.fullmatch(word):
            found = [self._line(match.start() - 1) for match in _words({word}).finditer(self.scanned)]
        else:
            found = []
            scanned, size = self.scanned, len(word)
            at = scanned.find(word)
            while at != -1:
                after = scanned[at + size : at + size + 1]
                if not (after and (after.isalnum() or after == "_")):
                    before = scanned[at - 1]  # scanned starts with "\n"
                    if not (before.isalnum() or before == "_"):
                        found.append(self._line(at - 1))
                at = scanned.find(word, at + 1)
        self.found[word] = found
        return found

    def _line(self, offset: int) -> int:
        return max(1, bisect_right(self.starts, offset))

    def shows(self, pattern: re.Pattern[str], start: int, end: int) -> bool:
        """Whether a match of pattern lies in lines start to end (a pattern rarely found in a file
        is searched whole by `touched`; one found everywhere, only where it is needed)."""
        return pattern.search(self.scanned, self.starts[start - 1] + 1, self.starts[end] + 1) is not None

    def contains(self, literal: str, start: int, end: int) -> bool:
        return self.scanned.find(literal, self.starts[start - 1] + 1, self.starts[end] + 1) != -1

    def findall(self, pattern: re.Pattern[str], start: int, end: int) -> list[str]:
        return pattern.findall(self.scanned, self.starts[start - 1] + 1, self.starts[end] + 1)

    def text_of(self, start: int, end: int) -> str:
        return "".join(self.lines[start - 1 : end])


class _Triggers:
    """Which lines hold what any active rule's scope triggers look for."""

    def __init__(self, lines: _Lines, scan: _Scan, triggers: Iterable[Trigger]) -> None:
        touched: set[int] = set()
        self.source = lines
        #: Of each `AllOf`: the lines its first pattern touches, and the rest, looked for scope by scope.
        self.conjunctions: list[tuple[list[int], tuple[re.Pattern[str], ...]]] = []
        patterns: list[re.Pattern[str]] = []
        for trigger in triggers:
            if isinstance(trigger, Stores):
                touched |= trigger.lines(scan, lines)
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
            touched.update(line for line, _ in lines.words(aliases))
        self.lines = sorted(touched)

    def __call__(self, *spans: tuple[int, int]) -> bool:
        """Whether the scope made of these line spans shows a trigger."""
        return any(_any_between(self.lines, *span) for span in spans) or any(
            any(_any_between(first, *span) for span in spans)
            and all(any(self.source.shows(pattern, *span) for span in spans) for pattern in rest)
            for first, rest in self.conjunctions
        )


def _item_store_bases(node: ast.stmt) -> set[str] | None:
    """The names an assignment stores items of (`out` of `out[i] = y`), when every store it
    makes is into an item of a name; else None."""
    if not isinstance(node, ast.Assign | ast.AnnAssign):
        return None
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    stores = [store for target in targets for store in _stores_in(target)]
    if not all(isinstance(store.value, ast.Name) for store in stores):
        return None
    return {store.value.id for store in stores}  # type: ignore[attr-defined]


def _stores_in(target: ast.expr) -> list[ast.Subscript]:
    if isinstance(target, ast.Tuple | ast.List):
        return [store for element in target.elts for store in _stores_in(element)]
    if isinstance(target, ast.Starred):
        return _stores_in(target.value)
    return [target] if _stored_into(target) else []


#: What flow.py evaluates to a container, never an array: displays and comprehensions.
_CONTAINERS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
#: Methods of lists, dicts and sets: a name read only through these is not taken for a tensor
#: (flow.py gives a name read before it is bound the type its scope's method calls suggest).
_CONTAINER_METHODS = frozenset(
    {
        *("append", "extend", "insert", "pop", "remove", "clear", "copy", "index", "count", "sort", "reverse"),
        *("keys", "values", "items", "get", "update", "setdefault", "popitem", "move_to_end", "add", "discard"),
    }
)


def _shows_container_binding(source: _Lines, function: _Function, name: str) -> bool:
    """Whether the function's text binds name to a display (`out = []`, `d: dict = {}`), or has it
    as `*args` / `**kwargs`: the cheap test before `_only_container` walks the function."""
    pattern = rf"\b{name}\s*(?::[^=\n]*)?=\s*[\[{{]|\*{name}\b"
    return re.search(pattern, source.text_of(function.lineno, function.end_lineno or function.lineno)) is not None


def _only_container(function: _Function, name: str, declared: set[str], source: _Lines) -> bool:
    """Whether a function binds name only to containers, by plain assignment: not a parameter (but
    `*args` and `**kwargs`), nothing declared `global` or `nonlocal`."""
    arguments = function.args
    if name in declared or any(a.arg == name for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)):
        return False
    container = any(a is not None and a.arg == name for a in (arguments.vararg, arguments.kwarg))
    plain: set[int] = set()
    for node in _own_nodes(function.body, source.mentions([name], function.lineno, function.end_lineno)):
        kind = type(node)
        if (kind is ast.Assign or kind is ast.AnnAssign) and isinstance(node.value, _CONTAINERS):
            for target in node.targets if kind is ast.Assign else [node.target]:
                if isinstance(target, ast.Name):
                    container = container or target.id == name
                    plain.add(id(target))
        elif kind is ast.Name:
            if node.id == name and not isinstance(node.ctx, ast.Load) and id(node) not in plain:
                return False
        elif kind is ast.Attribute:
            if isinstance(node.value, ast.Name) and node.value.id == name and node.attr not in _CONTAINER_METHODS:
                return False
        elif kind in _DEFINITIONS:
            if node.name == name:
                return False
        elif kind is ast.Import or kind is ast.ImportFrom:
            if any((alias.asname or alias.name).split(".")[0] == name for alias in node.names):
                return False
        elif kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
            if node.name == name:
                return False
        elif kind is ast.MatchMapping and node.rest == name:
            return False
    return container


def _own_nodes(statements: list[ast.stmt], mentions: list[int] | None = None) -> Iterator[ast.AST]:
    """The nodes of a scope's statements, each before its children, without the bodies of the
    functions, lambdas and classes defined in it (their names, defaults and decorators are its own);
    with `mentions`, only the statements that span one of those lines (the rest, skipped whole)."""
    pending: list[ast.AST] = list(reversed(statements))
    while pending:
        node = pending.pop()
        if mentions is not None and isinstance(node, ast.stmt) and not _any_between(mentions, *_span(node)):
            continue
        yield node
        if isinstance(node, (*_FUNCTION, ast.Lambda)):
            arguments = node.args
            children = [*arguments.defaults, *filter(None, arguments.kw_defaults), *getattr(node, "decorator_list", ())]
        elif isinstance(node, ast.ClassDef):
            children = [*node.bases, *node.keywords, *node.decorator_list]
        else:
            children = list(ast.iter_child_nodes(node))
        pending.extend(reversed(children))


def _span(node: ast.stmt) -> tuple[int, int]:
    """A statement's first line (its first decorator's) and last."""
    decorators = getattr(node, "decorator_list", None)
    return (decorators[0].lineno if decorators else node.lineno), node.end_lineno or node.lineno


def _stored_into(target: ast.expr) -> bool:
    if isinstance(target, ast.Tuple | ast.List):
        return any(_stored_into(element) for element in target.elts)
    if isinstance(target, ast.Starred):
        return _stored_into(target.value)
    # `batch["image"] = t` stores into a mapping: tensors are never indexed by strings (flow.py `_store_item`).
    return isinstance(target, ast.Subscript) and not _is_key(target.slice)


def _is_key(index: ast.expr) -> bool:
    """A string, or a tuple of strings (a nested key), as flow.py `_keyed_by_string` reads them."""
    if isinstance(index, ast.JoinedStr) or isinstance(index, ast.Constant) and isinstance(index.value, str):
        return True
    return isinstance(index, ast.Tuple) and bool(index.elts) and all(map(_is_key, index.elts))


def _within(spans: list[tuple[int, int]], starts: list[int], line: int) -> bool:
    """Whether line lies in one of these disjoint spans, sorted (`starts`: their first lines)."""
    index = bisect_right(starts, line) - 1
    return index >= 0 and line <= spans[index][1]


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
    is_function: bool = False
    is_class: bool = False
    is_import: bool = False
    #: Part of the module's (or the class's) own flow of statements.
    is_statement: bool = False

    @property
    def node(self) -> ast.stmt:
        return self.nodes[0]

    def classify(self) -> None:
        one = type(self.nodes[0]) if len(self.nodes) == 1 else None
        self.is_function = one in _FUNCTION
        self.is_class = one is ast.ClassDef
        self.is_import = all(type(node) in _IMPORT for node in self.nodes)
        self.is_statement = not (self.is_function or self.is_class or self.is_import)


class _Reducer:
    def __init__(self, lines: _Lines, tree: ast.Module, scan: _Scan, triggers: _Triggers) -> None:
        self.index = lines
        self.lines = lines.lines
        self.scan = scan
        self.triggers = triggers
        self.units = _units(tree.body)
        self.summary_candidates: list[tuple[str, _Unit]] | None = None
        self.out: list[str] = []
        self.origin: list[int] = []

    def text(self, start: int, end: int) -> str:
        return self.index.text_of(start, end)

    def hit(self, unit: _Unit) -> bool:
        return self.triggers((unit.start, unit.end))

    def source(self, unit: _Unit) -> str:
        return self.text(unit.start, unit.end)

    def run(self) -> Reduction | None:
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
            if any(member.kept and member.is_function for member in unit.members):
                self._keep_class_facts(unit)
            self._settle(unit)

    def _keep_class_facts(self, unit: _Unit) -> None:
        """What a class's instances hold, which its kept methods and the kept scopes that name it
        read: its header and the methods that state it (a method that only reads `self.*` is not
        needed to judge another), and those that use an attribute holding an `inplace` module
        (calling it is a write)."""
        inplace = set()
        if any(self.index.contains(word, unit.start, unit.end) for word in _module_write_keywords()):
            inplace = self.scan.inplace_attributes(unit.start, unit.end)
        uses_inplace = _self_attributes_pattern(inplace)
        shows, self_stores = self.index.shows, self.scan.self_stores
        for member in unit.members:
            if member.is_function and not member.kept:
                start, end = member.start, member.end
                member.kept = (
                    shows(_FACT_CALLS, start, end)
                    or _any_between(self_stores, start, end)
                    or (uses_inplace is not None and shows(uses_inplace, start, end))
                )

    def _settle(self, unit: _Unit) -> None:
        if unit.members and all(member.kept for member in unit.members):
            unit.kept, unit.members = True, []

    def _keep_summarised_callees(self) -> None:
        """Functions and methods whose returned value a kept scope that names them is judged by."""
        if self.summary_candidates is None:
            self.summary_candidates = self._summary_candidates()
        candidates: dict[str, list[_Unit]] = {}
        for name, scope in self.summary_candidates:
            if not scope.kept:
                candidates.setdefault(name, []).append(scope)
        if not candidates:
            return
        kept = [scope for unit in self.units for scope in unit.members or [unit] if scope.kept]
        for line, name in self.index.words(set(candidates)):
            if any(scope.start <= line <= scope.end for scope in kept):
                for scope in candidates.pop(name, ()):
                    scope.kept = True
        for unit in self.units:
            self._settle(unit)

    def _summary_candidates(self) -> list[tuple[str, _Unit]]:
        """Each function or method that may be summarised, by the word a scope calling it shows: its name; for
        the `forward` (or `__call__`) of a class that names an op keeping its output, the class's too
        (`self.block(x)` after `self.block = Block(...)`: what `Block.forward` returns, a ReLU kept)."""
        returns = self.index.occurrences("return")  # sorted
        links = sorted(self.index.holding(_summary_links()))
        outputs = sorted(self.index.holding(_output_links()))
        found = []
        for unit in self.units:
            for scope in unit.members or [unit]:
                if not (scope.is_function and _any_between(returns, scope.start, scope.end)):
                    continue
                if _any_between(links, scope.start, scope.end) or _any_between(outputs, scope.start, scope.end):
                    found.append((scope.node.name, scope))
                called = unit.is_class and scope.node.name in _CALLED_METHODS
                if called and _any_between(outputs, unit.start, unit.end):
                    found.append((unit.node.name, scope))
        return found

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
                if unit.is_function
                and unit.kept
                and unit.node.name not in followed
                and (depth == 0 or _passes_own_value_to(unit, followed, self.index))
            }
            self._keep_method_callers()
            names |= self._keep_object_bindings() - followed
            self._keep_local_object_users()
            self._keep_attribute_callers()
            if self.body_kept and depth == 0:  # functions defined under a module-level `if` or `try`
                for unit in self.units:
                    if unit.is_statement:
                        names.update(self.index.findall(_DEF_NAME, unit.start, unit.end))
            if not names:
                break
            followed |= names
            mentions = sorted({line for line, _ in self.index.words(names)})
            for unit in self.units:
                for scope in unit.members or [unit]:
                    if not scope.kept and not scope.is_import and _any_between(mentions, scope.start, scope.end):
                        scope.kept = True
                self._settle(unit)
            self._keep_whole_body()

    def _called_classes(self) -> set[str]:
        """Classes whose `__call__` or `forward` is kept: calling one of their objects runs it."""
        return {
            unit.node.name
            for unit in self.units
            if unit.is_class
            and (
                (unit.kept and not unit.members)
                or any(m.kept and m.is_function and m.node.name in _CALLED_METHODS for m in unit.members)
            )
        }

    def _keep_attribute_callers(self) -> None:
        """Methods that use an attribute holding an object of a class whose `__call__` or `forward` is kept
        (`self.mlp = MLP(...)`, then `self.mlp(x)` runs `MLP.forward`, whose write the call confirms), with
        what their class's instances hold."""
        classes = self._called_classes()
        if not classes:
            return
        binding = re.compile(r"\bself\s*\.\s*(\w+)\s*=\s*(?:" + "|".join(sorted(classes)) + r")\s*\(")
        uses = _self_attributes_pattern(set(self.index.findall(binding, 1, len(self.lines))))
        if uses is None:
            return
        for unit in self.units:
            self._keep_methods_showing(unit, uses)

    def _keep_method_callers(self) -> None:
        """Methods that call a kept method of their class (`self.reg(logits)`): what they pass it is what the
        method starts from (model.py `_passed`), and a write it makes to its argument is one in theirs."""
        for unit in self.units:
            calls = _self_attributes_pattern({m.node.name for m in unit.members if m.is_function and m.kept})
            if calls is not None:
                self._keep_methods_showing(unit, calls)

    def _keep_methods_showing(self, unit: _Unit, pattern: re.Pattern[str]) -> None:
        """The class's methods whose source shows `pattern`, with what its instances hold."""
        callers = [
            m for m in unit.members if m.is_function and not m.kept and self.index.shows(pattern, m.start, m.end)
        ]
        for member in callers:
            member.kept = True
        if callers:
            self._keep_class_facts(unit)
            self._settle(unit)

    def _keep_object_bindings(self) -> set[str]:
        """Module-level names bound to an object of a class whose `__call__` or `forward` is kept
        (`norm = Normalize(...)`): calling `norm` runs that method. The binding statements are kept,
        since they say what the name holds (semantic/class_facts.py `instances`)."""
        classes = self._called_classes()
        bound: set[str] = set()
        for unit in self.units:
            if not (classes and unit.is_statement):
                continue
            for node in unit.nodes:
                if _binds_object(node, classes):
                    bound.update(target.id for target in node.targets if isinstance(target, ast.Name))
                    unit.kept = True
        return bound

    def _keep_local_object_users(self) -> None:
        """Functions and methods that bind a local name to an object of a class whose `__call__` or `forward`
        is kept (`net = Model()`, then `net(x)` runs `Model.forward`), or call one as they make it (`Model()(x)`):
        what they pass is what the method starts from, and its write to their tensor, or to the result they
        hold from an earlier call, is one in theirs."""
        classes = self._called_classes()
        if not classes:
            return
        mentions = sorted({line for line, _ in self.index.words(classes)})
        for unit in self.units:
            users = [
                scope
                for scope in unit.members or [unit]
                if scope.is_function
                and not scope.kept
                and _any_between(mentions, scope.start, scope.end)
                and any(
                    _binds_object(node, classes) or _calls_new_object(node, classes)
                    for node in _walk_near(scope.node, mentions)
                )
            ]
            for scope in users:
                scope.kept = True
            if users and unit.members:
                self._keep_class_facts(unit)
            self._settle(unit)

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

    def _scopes(self) -> Iterator[_Unit]:
        """The top-level units, and in place of a class hollowed in part, its members."""
        for unit in self.units:
            yield from unit.members or [unit]

    def _keep_built_classes(self) -> None:
        """Classes whose attribute facts a kept scope relies on by naming them (`model = Net()`, then
        `model.fc.weight`), and in turn those their methods name (`self.encoder = Encoder()`)."""
        pending = {unit.node.name: unit for unit in self.units if unit.is_class and not unit.kept}
        mentions = list(self.index.words(set(pending))) if pending else []
        while pending:
            kept = sorted((scope.start, scope.end) for scope in self._scopes() if scope.kept)
            starts = [start for start, _ in kept]
            named = {name for line, name in mentions if name in pending and _within(kept, starts, line)}
            if not named:
                return
            for name in named:
                unit = pending.pop(name)
                if unit.members:
                    self._keep_class_facts(unit)
                    self._settle(unit)
                else:  # `class A: x = 1`: whole or nothing
                    unit.kept = True

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
        start, end = _span(nodes[0])[0], max(node.end_lineno or node.lineno for node in nodes)
        return [self._segment(child) for child in self.scan.imports_within(start, end)]

    def _segment(self, node: ast.stmt) -> str:
        """A statement's exact source; ast columns count UTF-8 bytes."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        if first == last:
            return self.lines[first].encode()[node.col_offset : node.end_col_offset].decode()
        head = self.lines[first].encode()[node.col_offset :].decode()
        tail = self.lines[last].encode()[: node.end_col_offset].decode()
        return head + "".join(self.lines[first + 1 : last]) + tail


def _attribute_of_self(target: ast.expr) -> str | None:
    """`act` of `self.act` and of `self.act.fn`."""
    while isinstance(target, ast.Attribute):
        if _is_self(target.value):
            return target.attr
        target = target.value
    return None


def _self_attributes_pattern(attributes: set[str]) -> re.Pattern[str] | None:
    """Text that mentions `self.<one of attributes>`."""
    return re.compile(r"\bself\s*\.\s*(?:" + "|".join(sorted(attributes)) + r")\b") if attributes else None


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


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
        start, end = _span(node)
        if units and start <= units[-1].end:  # `import a; x = 1` share a line
            units[-1].nodes.append(node)
            units[-1].end = max(units[-1].end, end)
        else:
            units.append(_Unit([node], start, end))
    for unit in units:
        unit.classify()
    return units


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]
