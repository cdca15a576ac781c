"""A read-only walk over a libcst tree that builds nothing.

`CSTNode.visit` (and `.children`) rebuild every node they pass, which costs about as
much as parsing; reading the dataclass fields of each node directly does not.
Subclasses define `visit_<NodeType>` (return False to skip the children) and
`leave_<NodeType>`, as with libcst's visitors.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import fields
from typing import Literal, Union, get_args, get_origin, get_type_hints

import libcst as cst

# Layout nodes never hold a name, a call or a statement: no need to enter them.
_LAYOUT = (
    cst.BaseParenthesizableWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Comment,
    cst.Newline,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.Comma,
    cst.Semicolon,
    cst.Colon,
    cst.Dot,
    cst.AssignEqual,
    cst.BaseBinaryOp,
    cst.BaseBooleanOp,
    cst.BaseUnaryOp,
    cst.BaseCompOp,
    cst.BaseAugOp,
)

#: What a field of a node type can hold: nothing to enter, always one node, a sequence of nodes,
#: or a value to check (an optional node, or a type that layout nodes share).
_NOTHING, _NODE, _NODES, _CHECK, _CHECK_EACH = range(5)
_FIELDS: dict[type, tuple[tuple[str, int], ...]] = {}
_SEQUENCES = (Sequence, list, tuple)
_IS_LAYOUT: dict[type, bool] = {}


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    kind = type(node)
    shapes = _FIELDS.get(kind)
    if shapes is None:
        shapes = _FIELDS[kind] = _shapes(kind)
    children: list[cst.CSTNode] = []
    for name, shape in shapes:
        value = getattr(node, name)
        if shape == _NODE:
            children.append(value)
        elif shape == _NODES:
            children.extend(value)
        elif shape == _CHECK:
            if _is_syntax(value):
                children.append(value)
        elif isinstance(value, (list, tuple)):
            children.extend(item for item in value if _is_syntax(item))
        elif _is_syntax(value):
            children.append(value)
    return children


def _is_syntax(value: object) -> bool:
    kind = type(value)
    layout = _IS_LAYOUT.get(kind)
    if layout is None:
        layout = _IS_LAYOUT[kind] = not isinstance(value, cst.CSTNode) or isinstance(value, _LAYOUT)
    return not layout


def _shapes(kind: type) -> tuple[tuple[str, int], ...]:
    """The fields of a node type worth reading, from its annotations: reading every field and
    checking every value costs more than the rest of a walk."""
    try:
        hints = get_type_hints(kind)
    except (NameError, TypeError, AttributeError):  # an annotation that does not resolve: check every value
        hints = {}
    shapes = []
    for item in fields(kind):
        if "whitespace" in item.name:
            continue  # layout by name
        shape = _shape(hints[item.name]) if item.name in hints else _CHECK_EACH
        if shape != _NOTHING:
            shapes.append((item.name, shape))
    return tuple(shapes)


def _shape(annotation: object) -> int:
    """How to read a field annotated so."""
    origin = get_origin(annotation)
    if origin in _SEQUENCES:
        element = _shape(get_args(annotation)[0]) if get_args(annotation) else _CHECK
        return _NOTHING if element == _NOTHING else _NODES if element == _NODE else _CHECK_EACH
    if origin in (Union, types.UnionType):
        members = {_shape(member) for member in get_args(annotation)}
        if members in ({_NOTHING}, {_NODE}):
            return members.pop()
        return _CHECK_EACH if members & {_NODES, _CHECK_EACH} else _CHECK  # `Optional[Name]`: check
    if origin is Literal:
        return _NOTHING
    if not isinstance(annotation, type):
        return _CHECK  # an annotation this does not know: look at the value
    if not issubclass(annotation, cst.CSTNode) or issubclass(annotation, _LAYOUT):
        return _NOTHING  # str, bool, None, MaybeSentinel, layout
    if any(issubclass(layout, annotation) for layout in _LAYOUT):
        return _CHECK  # a base class that layout nodes share
    return _NODE


_HANDLERS: dict[tuple[type, type], tuple] = {}


class Walker:
    def walk(self, node: cst.CSTNode) -> None:
        visit, leave = _handlers(type(self), type(node))
        if visit is None or visit(self, node) is not False:
            for child in child_nodes(node):
                self.walk(child)
        if leave is not None:
            leave(self, node)


def _handlers(walker: type, kind: type) -> tuple:
    found = _HANDLERS.get((walker, kind))
    if found is None:
        name = kind.__name__
        found = _HANDLERS[(walker, kind)] = (
            getattr(walker, f"visit_{name}", None),
            getattr(walker, f"leave_{name}", None),
        )
    return found


class NodeIds(Walker):
    """The ids of every node walked (`walk` it over each tree whose nodes are wanted)."""

    def __init__(self) -> None:
        self.ids: set[int] = set()

    def walk(self, node: cst.CSTNode) -> None:
        self.ids.add(id(node))
        super().walk(node)


def used_names(node: cst.CSTNode) -> set[str]:
    """Every name that appears inside `node` (attribute names too: an over-approximation of what it reads)."""
    names = _Names()
    names.walk(node)
    return names.found


class _Names(Walker):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)
