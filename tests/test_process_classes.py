"""Which methods of a module's classes run in a child process, and which queue each `self.` attribute
holds (semantic/process_classes.py): the placement GML209 and GML213 ask."""

from __future__ import annotations

import textwrap

import libcst as cst

from gpumem_lint.semantic.boundaries import ProcessModel
from gpumem_lint.semantic.model import SemanticModel

_SOURCE = """
import torch.multiprocessing as mp
from multiprocessing import Process

class Reader(mp.Process):
    def __init__(self, in_q, out_q):
        super().__init__()
        self.in_q = in_q
        self.out_q = out_q

    def run(self):
        self.out_q.put(self.in_q.get())

    def stop(self):
        pass

class FastReader(Reader):
    def run(self):
        pass

class Plain:
    def run(self):
        pass

class Looper:
    def __init__(self, *, outbox):
        self.inbox = mp.Queue()
        self.outbox = outbox
        self.worker = Process(target=self.loop)

    def loop(self):
        pass

    def feed(self):
        pass

def main():
    raw, done = mp.Queue(), mp.Queue()
    Reader(raw, done).start()
    Looper(outbox=done)
"""


def _model() -> tuple[ProcessModel, cst.Module]:
    module = cst.parse_module(textwrap.dedent(_SOURCE))
    semantic = SemanticModel.build(module)
    return ProcessModel(semantic.facts, semantic.imports), module


def _in_child(model: ProcessModel) -> set[str]:
    return {
        f"{facts.scope.class_name}.{facts.scope.name}" for facts in model.facts if model.classes.runs_in_child(facts)
    }


def test_run_of_a_process_subclass_and_a_bound_target_run_in_the_child():
    model, _ = _model()
    # FastReader derives from Process through Reader; Plain.run is just a method; the parent calls the rest.
    assert _in_child(model) == {"Reader.run", "FastReader.run", "Looper.loop"}


def test_self_queues_are_the_calls_that_made_them():
    model, module = _model()
    main = next(s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == "main")
    raw, done = (element.value for element in main.body.body[0].body[0].value.elements)
    # `self.in_q = in_q`, and `Reader(raw, done)` passes `raw` for `in_q`
    assert model.classes.channels[("Reader", "in_q")] == {raw}
    assert model.classes.channels[("Reader", "out_q")] == {done}
    # made in `__init__`
    assert [module.code_for_node(node) for node in model.classes.channels[("Looper", "inbox")]] == ["mp.Queue()"]
    assert ("Looper", "worker") not in model.classes.channels  # a Process, not a channel
    assert model.classes.channels[("Looper", "outbox")] == {done}  # a keyword-only parameter, passed by name
