"""Environment writes and forks at run time (gpumem_lint/trace/environment.py), without torch: the events a
run records are set by hand, each case is (events so far, what the program does, findings it must give)."""

from __future__ import annotations

import pytest

from gpumem_lint.trace.environment import Environment
from gpumem_lint.trace.findings import FindingLog
from gpumem_lint.trace.sites import Site, SiteFinder

WRITE_SITE = Site("/project/train.py", 12)
EVENT_SITE = Site("/project/train.py", 5)

CASES = [
    # (name, events recorded before the write, variable, value, launch afterwards, expected code or None)
    ("thread count after import torch", ["import_torch"], "OMP_NUM_THREADS", "1", False, "GML303"),
    ("visible devices after is_available", ["cuda_driver_init"], "CUDA_VISIBLE_DEVICES", "1", False, "GML301"),
    (
        "visible devices after torch.cuda init (implies the driver)",
        ["torch_cuda_init"],
        "CUDA_VISIBLE_DEVICES",
        "1",
        False,
        "GML301",
    ),
    (
        "allocator config after torch.cuda init",
        ["torch_cuda_init"],
        "PYTORCH_CUDA_ALLOC_CONF",
        "expandable_segments:True",
        False,
        "GML302",
    ),
    (
        "allocator config before torch.cuda init",
        ["cuda_driver_init"],
        "PYTORCH_CUDA_ALLOC_CONF",
        "expandable_segments:True",
        False,
        None,
    ),
    ("unset after the event is a late write too", ["process_group_init"], "MASTER_PORT", None, False, "GML304"),
    ("written for a process launched afterwards", ["cuda_driver_init"], "CUDA_VISIBLE_DEVICES", "1", True, None),
    ("a variable nothing locks", ["torch_cuda_init"], "MY_SETTING", "1", False, None),
]


class FixedSites(SiteFinder):
    def user_site(self, frame=None):
        return WRITE_SITE


def environment(events) -> tuple[Environment, FindingLog]:
    log = FindingLog()
    env = Environment(FixedSites(), log, pytest.fail)
    env.events.update({event: EVENT_SITE for event in events})
    return env, log


@pytest.mark.parametrize("name, events, variable, value, launch, expected", CASES, ids=[c[0] for c in CASES])
def test_late_writes(monkeypatch, name, events, variable, value, launch, expected):
    monkeypatch.setattr("gpumem_lint.trace.environment._observed_now", lambda event: False)
    env, log = environment(events)
    if value is None:
        env._on_unsetenv(variable.encode())
    else:
        env._on_putenv(variable.encode(), value.encode())
    if launch:
        env.launched()
    env.flush()
    findings = list(log)
    assert [finding.code for finding in findings] == ([expected] if expected else [])
    for finding in findings:
        assert finding.site == WRITE_SITE
        assert variable in finding.message
        assert finding.related == [(env._table.events[events[0]].title, EVENT_SITE)]


def test_fork_after_cuda_init_is_reported_when_the_child_uses_cuda(monkeypatch):
    monkeypatch.setattr("gpumem_lint.trace.environment._observed_now", lambda event: False)
    env, log = environment(["torch_cuda_init"])
    env._before_fork()  # in the parent, just before os.fork
    env.after_fork_in_child()  # in the child
    env.cuda_used()
    [finding] = list(log)
    assert (finding.code, finding.site) == ("GML204", WRITE_SITE)


def test_fork_before_cuda_init_is_not(monkeypatch):
    monkeypatch.setattr("gpumem_lint.trace.environment._observed_now", lambda event: False)
    env, log = environment([])
    env._before_fork()
    env.after_fork_in_child()
    env.cuda_used()
    assert list(log) == []
