"""Source sites: following calls (sys.monitoring, Python 3.12+) finds the same user line as walking the frames,
through generators, exceptions, callbacks from library code and threads; it stops cleanly."""

from __future__ import annotations

import sys
import textwrap

import pytest

from trace_runs import run

LIBRARY = """
def deep(n, f, *args):
    if n == 0:
        return f(*args)
    return deep(n - 1, f, *args)


def call_each(items, f):
    return [f(item) for item in items]


def both(sites):
    followed = sites.user_site()
    threads, sites._threads = sites._threads, None  # the same lookup, walking the frames
    walked = sites.user_site()
    sites._threads = threads
    return followed, walked
"""

PROGRAM = """
import sys
import threading

from gpumem_lint.trace.sites import SiteFinder

sys.path.insert(0, sys.argv[1])
import library  # noqa: E402

sites = SiteFinder(extra_library_roots=(sys.argv[1],))
seen = []


def generator():
    seen.append(("generator", library.deep(5, library.both, sites)))
    yield 1
    seen.append(("resumed", library.deep(5, library.both, sites)))
    try:
        yield 2
    except KeyError:
        seen.append(("thrown", library.deep(5, library.both, sites)))
    yield 3


def raiser():
    seen.append(("raiser", library.deep(5, library.both, sites)))
    raise ValueError


def callback(item):
    seen.append(("callback", library.deep(5, library.both, sites)))
    return item


def main():
    seen.append(("main", library.deep(5, library.both, sites)))
    numbers = generator()
    next(numbers)
    seen.append(("after next", library.deep(5, library.both, sites)))
    next(numbers)
    numbers.throw(KeyError)
    seen.append(("after throw", library.deep(5, library.both, sites)))
    try:
        library.deep(3, raiser)
    except ValueError:
        seen.append(("after raise", library.deep(5, library.both, sites)))
    library.call_each([1, 2], callback)
    thread = threading.Thread(target=lambda: seen.append(("thread", library.deep(5, library.both, sites))))
    thread.start()
    thread.join()


seen.append(("module, before", library.deep(5, library.both, sites)))
print("following:", sites.follow_calls())
main()
seen.append(("module, after", library.deep(5, library.both, sites)))
for name, (followed, walked) in seen:
    print(name, followed.line if followed else None, walked.line if walked else None)
sites.stop_following()
print("tool freed:", all(sys.monitoring.get_tool(tool) is None for tool in (3, 4)))
"""


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is Python 3.12+")
def test_following_calls_finds_the_line_walking_finds(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "library.py").write_text(textwrap.dedent(LIBRARY), encoding="utf-8")
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(PROGRAM).lstrip(), encoding="utf-8")
    done = run([sys.executable, str(script), str(tmp_path / "lib")], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "following: True"
    assert lines[-1] == "tool freed: True"
    rows = [line.rsplit(" ", 2) for line in lines[1:-1]]
    assert len(rows) == 13
    source = script.read_text(encoding="utf-8").splitlines()
    for name, followed, walked in rows:
        assert followed == walked != "None", name
        assert f'("{name}"' in source[int(followed) - 1], name  # the line that asked
