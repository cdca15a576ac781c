"""A read-only walk over a libcst tree that builds nothing.

`CSTNode.visit` (and `.children`) rebuild every node they pass, which costs about as
much as parsing; reading the dataclass fields of each node directly does not.
Subclasses define `visit_<NodeType>` (return False to skip the children) and
`leave_<NodeType>`, as with libcst's visitors.
"""

from __future__ import annotations

from dataclasses import fields

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

_FIELDS: dict[type, tuple[str, ...]] = {}
_IS_LAYOUT: dict[type, bool] = {}


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    kind = type(node)
    names = _FIELDS.get(kind)
    if names is None:
        # Whitespace fields are layout by name; checking their values would cost an
        # abstract-class isinstance per node.
        names = _FIELDS[kind] = tuple(f.name for f in fields(node) if "whitespace" not in f.name)
    children: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if isinstance(value, (list, tuple)):
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
