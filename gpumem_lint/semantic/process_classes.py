"""Classes whose methods run on both sides of a process boundary.

- Which methods run in a child process: the `run` of a class derived from `multiprocessing.Process`
  (`start()` runs it in the child), and a method handed as `target=self.<method>` to a `Process(...)`
  made in a method of its class. Every other method runs where it is called, taken for the parent.
- Which queue or pipe a `self.<attribute>` holds: the call that made it, when `__init__` assigns it
  one (`self.inbox = ctx.Queue()`), or the queues each construction of the class passes for the
  `__init__` parameter it assigns (`self.inbox = inbox` and `Worker(ctx.Queue(), ...)`).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gpumem_lint.semantic.flow import ScopeFacts
from gpumem_lint.semantic.processes import process_table
from gpumem_lint.semantic.values import Role

_CHANNEL_KINDS = ("queue", "pipe")


@dataclass(frozen=True)
class ProcessClasses:
    child_methods: frozenset[tuple[str, str]]  # (class, method)
    #: (class, attribute) -> the calls that made the queues or pipes it may hold
    channels: dict[tuple[str, str], frozenset[cst.CSTNode]]

    def runs_in_child(self, facts: ScopeFacts) -> bool:
        scope = facts.scope
        return scope.is_method and (scope.class_name, scope.name) in self.child_methods


def process_classes(facts: list[ScopeFacts]) -> ProcessClasses:
    table = process_table()
    child: set[tuple[str, str]] = set()
    channels: dict[tuple[str, str], frozenset[cst.CSTNode]] = {}
    for each in facts:
        scope = each.scope
        if not scope.is_method or scope.classes is None:
            continue
        if scope.name == "run" and scope.classes.derives_from(scope.class_name, table.process_classes):
            child.add((scope.class_name, scope.name))
        for crossing in each.processes.crossings:
            method = _self_attribute(crossing.target) if crossing.kind == "process" else None
            if method is not None:  # `Process(target=self.loop)`
                child.add((scope.class_name, method))
        if scope.name == "__init__":
            for attribute, value in _assigned(scope.node):
                made = _made_here(each, value) or _passed_channels(facts, scope, value)
                if made:
                    key = (scope.class_name, attribute)
                    channels[key] = channels.get(key, frozenset()) | made
    return ProcessClasses(frozenset(child), channels)


def _self_attribute(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _assigned(function: cst.FunctionDef):
    """`self.<attribute> = value` statements of the function's own body (not nested blocks)."""
    for line in function.body.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for statement in line.body:
            if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
                attribute = _self_attribute(statement.targets[0].target)
                if attribute is not None:
                    yield attribute, statement.value


def _made_here(init: ScopeFacts, value: cst.BaseExpression) -> frozenset[cst.CSTNode]:
    """`self.inbox = ctx.Queue()`: the call, which is the channel's identity (`Crossing.channel`)."""
    objects = init.processes.process_objects
    return frozenset(info.node for info in objects.values() if info.kind in _CHANNEL_KINDS and info.node is value)


def _passed_channels(facts: list[ScopeFacts], init, value: cst.BaseExpression) -> frozenset[cst.CSTNode]:
    """`self.inbox = inbox`: the queues every construction `Worker(...)` of the module passes for `inbox`."""
    if not isinstance(value, cst.Name) or value.value not in init.params:
        return frozenset()
    name = value.value
    # `self` is not passed; a keyword-only parameter is passed by name alone
    position = init.all_params.index(name) - 1 if name in init.all_params else None
    made: set[cst.CSTNode] = set()
    for caller in facts:
        for key, passed in caller.outgoing.get(init.class_name, ()):
            if key == name or (position is not None and key == position):
                objects = caller.processes.process_objects
                made.update(
                    h.node
                    for h in passed.handles
                    if h.role is Role.PROCESS_OBJECT and h in objects and objects[h].kind in _CHANNEL_KINDS
                )
    return frozenset(made)
