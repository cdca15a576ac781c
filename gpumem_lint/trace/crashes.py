"""A program that dies of an exception a hazard explains: the exception is a finding (hazards.toml, [[crashes]]).

The finding points at the innermost frame of the user's own code in the traceback: the write itself for errors
raised by the in-place op (a leaf, a multi-output view, overlapping memory), the `backward()` call for a saved
tensor that was modified. An error re-raised from another process (a DataLoader worker's) carries the original
traceback as text: its innermost user frame is the one reported. Nothing here changes the exception.

An exception that a hazard explains and that the program catches (a `try` around the refused write) is a finding
too, where Python tells of caught exceptions (3.12+, sites.py): it happened all the same.
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


def explain(error: BaseException, sites: SiteFinder, *, caught: bool = False) -> Finding | None:
    """The finding the exception (or one in its chain) is evidence of, or None; `caught`: the program caught it
    rather than ending with it."""
    for link in _chain(error):
        text = str(link)
        crash = next((crash for crash in CRASHES if crash.match in text and _passes(link, crash.through)), None)
        if crash is not None:
            site = _innermost_quoted_frame(text, sites) or _innermost_user_frame(link, sites)
            site = site or _innermost_user_frame(error, sites)
            said = _EXCEPTION_NAME.sub("", next(line for line in text.splitlines() if crash.match in line).strip())
            ended = f"`{type(link).__name__}: {_shortened(said)}`"
            message = f"{crash.says} (the program {'caught' if caught else 'ended with'} {ended})"
            return Finding(crash.code, message, site, crash=True)
    return None


class CaughtErrors:
    """Exceptions a hazard explains that a handler in user code received. A handler that raises the exception again
    did not catch it (`with` and `finally` blocks run as handlers); one the program ends with is the crash's
    finding, not a caught one. Only identities are kept, not the exceptions: a traceback holds its frames, and their
    tensors, alive. An identity is ids, which a freed exception's successor may take: that costs a repeat its count
    (never a finding), since the identity includes where it was raised."""

    def __init__(self, sites: SiteFinder) -> None:
        self.sites = sites
        self._caught: list[Finding] = []
        #: identity -> (its traceback's length when handled, its finding): handled, not known to be passed on.
        self._handling: dict[tuple, tuple[int, Finding]] = {}

    def handled(self, error: BaseException) -> None:
        key, depth = _identity(error)
        known = self._handling.get(key)
        if known is not None:
            if depth > known[0]:  # the same exception again, further out (`raise error` in the handler)
                self._handling[key] = (depth, known[1])
                return
            self._caught.append(known[1])  # a new exception where a freed one was: that one stayed caught
        finding = explain(error, self.sites, caught=True)
        if finding is None:
            self._handling.pop(key, None)
        else:
            self._handling[key] = (depth, finding)

    def reraised(self, error: BaseException) -> None:
        if self._handling:  # told of every handler's re-raise, the library's too: most find nothing to drop
            self._handling.pop(_identity(error)[0], None)

    def ended_with(self, error: BaseException) -> None:
        """The program ends with `error`: none of its chain was caught for good."""
        for link in _chain(error):
            self._handling.pop(_identity(link)[0], None)

    def findings(self) -> list[Finding]:
        found = self._caught + [finding for _, finding in self._handling.values()]
        self._caught, self._handling = [], {}
        return found


def _identity(error: BaseException) -> tuple[tuple, int]:
    """The exception's identity and the length of its traceback. Its innermost traceback entry, where it was
    raised, stays the same as it propagates (outer entries are added in front)."""
    tb, depth = error.__traceback__, 0
    while tb is not None and tb.tb_next is not None:
        tb, depth = tb.tb_next, depth + 1
    raised = (id(tb), id(tb.tb_frame.f_code), tb.tb_lasti) if tb is not None else ()
    return (id(error), *raised), depth


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
