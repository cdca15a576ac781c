"""A program that dies of an exception a hazard explains: the exception is a finding (hazards.toml, [[crashes]]).

The finding points at the innermost frame of the user's own code in the traceback: the write itself for errors
raised by the in-place op (a leaf, a multi-output view, overlapping memory), the `backward()` call for a saved
tensor that was modified. An error re-raised from another process (a DataLoader worker's) carries the original
traceback as text: its innermost user frame is the one reported. Nothing here changes the exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpumem_lint.trace.codes import CRASHES
from gpumem_lint.trace.findings import Finding
from gpumem_lint.trace.sites import Site, SiteFinder


#: A frame of a traceback printed into an exception's message.
_QUOTED_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.MULTILINE)
#: The `RuntimeError: ` that starts the last line of such a traceback.
_EXCEPTION_NAME = re.compile(r"^\w+: ")


def explain(error: BaseException, sites: SiteFinder) -> Finding | None:
    """The finding the exception (or one in its chain) is evidence of, or None."""
    for link in _chain(error):
        text = str(link)
        crash = next((crash for crash in CRASHES if crash.match in text and _passes(link, crash.through)), None)
        if crash is not None:
            site = _innermost_quoted_frame(text, sites) or _innermost_user_frame(link, sites)
            site = site or _innermost_user_frame(error, sites)
            said = _EXCEPTION_NAME.sub("", next(line for line in text.splitlines() if crash.match in line).strip())
            ended = f"`{type(link).__name__}: {_shortened(said)}`"
            message = f"{crash.says} (the program ended with {ended})"
            return Finding(crash.code, message, site, crash=True)
    return None


def _passes(error: BaseException, through: str | None) -> bool:
    if through is None:
        return True
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith(through):
            return True
        tb = tb.tb_next
    return False


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


def _innermost_quoted_frame(text: str, sites: SiteFinder) -> Site | None:
    frames = [Site(path, int(line)) for path, line in _QUOTED_FRAME.findall(text) if sites.is_user_file(path)]
    return frames[-1] if frames else None


def _shortened(line: str) -> str:
    return line if len(line) <= 120 else line[:117] + "..."
