"""A program that dies of an exception a hazard explains: the exception is a finding (hazards.toml, [[crashes]]).

The finding points at the innermost frame of the user's own code in the traceback: the write itself for errors
raised by the in-place op (a leaf, a multi-output view, overlapping memory), the `backward()` call for a saved
tensor that was modified. Nothing here changes the exception or its traceback.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpumem_lint.trace.codes import CRASHES, Crash
from gpumem_lint.trace.findings import Finding
from gpumem_lint.trace.sites import Site, SiteFinder


def explain(error: BaseException, sites: SiteFinder) -> Finding | None:
    """The finding the exception (or one in its chain) is evidence of, or None."""
    outer_site = _innermost_user_frame(error, sites)
    for link in _chain(error):
        crash = _crash_for(str(link))
        if crash is not None:
            site = _innermost_user_frame(link, sites) or outer_site
            summary = f"{type(link).__name__}: {_first_line(str(link))}"
            return Finding(crash.code, f"{crash.says} (the program ended with {summary})", site)
    return None


def _crash_for(text: str) -> Crash | None:
    return next((crash for crash in CRASHES if crash.match in text), None)


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        link = pending.pop(0)
        if link is None or id(link) in seen:
            continue
        seen.add(id(link))
        yield link
        pending.extend((link.__cause__, link.__context__))


def _innermost_user_frame(error: BaseException, sites: SiteFinder) -> Site | None:
    site = None
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if sites.is_user_file(filename):
            site = Site(filename, tb.tb_lineno)
        tb = tb.tb_next
    return site


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 120 else line[:117] + "..."
