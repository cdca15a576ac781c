"""What the tracer observed: hazards grouped by (code, where it was written, where the alias came from).

Findings are plain data so that child processes can send theirs back as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpumem_lint.trace.sites import Site


@dataclass
class Finding:
    code: str
    #: The sentence that explains it, without sites (they are appended from the fields below).
    message: str
    #: Where the report points: the write, the env-var assignment, the fork.
    site: Site | None
    #: Named further locations, in the order the story happens: [("alias made", site), ("read", site)].
    related: list[tuple[str, Site]] = field(default_factory=list)
    count: int = 1
    pid: int | None = None
    #: Read from the exception the program died of: it proves the hazard happened, wherever the static check
    #: put its line (a sender's `put` in a child explains the receiver's failure in the parent).
    crash: bool = False
    #: The torchrun ranks it was observed on (`trace --nproc-per-node`); empty for a single process.
    ranks: tuple[int, ...] = ()

    @property
    def key(self) -> tuple:
        return (self.code, self.site, tuple(self.related[:1]))

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "message": self.message,
            "site": self.site.to_json() if self.site else None,
            "related": [[label, site.to_json()] for label, site in self.related],
            "count": self.count,
            "pid": self.pid,
            "crash": self.crash,
            "ranks": list(self.ranks),
        }

    @classmethod
    def from_json(cls, value: dict) -> Finding:
        return cls(
            code=value["code"],
            message=value["message"],
            site=Site.from_json(value["site"]) if value["site"] else None,
            related=[(label, Site.from_json(site)) for label, site in value["related"]],
            count=value["count"],
            pid=value["pid"],
            crash=value["crash"],
            ranks=tuple(value["ranks"]),
        )


#: The label of the line where the program died of the exception a finding explains.
FAILED_HERE = "the program failed here"


class FindingLog:
    """Repeats of one hazard (same code, site and alias site) fold into one finding with a count."""

    def __init__(self) -> None:
        self._by_key: dict[tuple, Finding] = {}

    def add(self, finding: Finding) -> None:
        existing = self._by_key.get(finding.key)
        if existing is None:
            self._by_key[finding.key] = finding
        else:
            existing.count += finding.count
            existing.ranks = tuple(sorted({*existing.ranks, *finding.ranks}))

    def add_evidence_of_crash(self, crash: Finding) -> None:
        """The exception the program died of: it completes the story of a finding of its code already seen
        (a saved tensor's write, before the backward that failed), or it is a finding of its own."""
        earlier = [f for f in self._by_key.values() if f.code == crash.code]
        if earlier:
            if crash.site != earlier[-1].site:  # a write the op refused: it failed at the line already named
                earlier[-1].related.append((FAILED_HERE, crash.site))
        else:
            self.add(crash)

    def extend(self, findings) -> None:
        for finding in findings:
            self.add(finding)

    def clear(self) -> None:
        self._by_key.clear()

    def __iter__(self):
        return iter(list(self._by_key.values()))

    def __len__(self) -> int:
        return len(self._by_key)


@dataclass
class Observation:
    """What one traced process (with its children) saw, as the report needs it; ranks send theirs as JSON."""

    findings: list[Finding]
    evidence: list[Finding]
    #: Every user line an op or event was seen at (the cross-reference's "reached").
    seen: set[tuple[str, int]]
    #: The first-party files that ran: what the static pass lints.
    files: list[str]
    #: The option that ended tracing early, if one did.
    stopped_by: str | None = None

    def to_json(self) -> dict:
        return {
            "findings": [finding.to_json() for finding in self.findings],
            "evidence": [finding.to_json() for finding in self.evidence],
            "seen": sorted([path, line] for path, line in self.seen),
            "files": self.files,
            "stopped_by": self.stopped_by,
        }

    @classmethod
    def from_json(cls, value: dict) -> Observation:
        return cls(
            findings=[Finding.from_json(item) for item in value["findings"]],
            evidence=[Finding.from_json(item) for item in value["evidence"]],
            seen={(path, line) for path, line in value["seen"]},
            files=value["files"],
            stopped_by=value["stopped_by"],
        )

    @classmethod
    def merged(cls, parts: list[tuple[int, Observation]]) -> Observation:
        """One observation of several ranks: a finding seen on several is one finding with their ranks."""
        findings, evidence = FindingLog(), FindingLog()
        for rank, part in parts:
            findings.extend(replace(finding, ranks=(rank,)) for finding in part.findings)
            evidence.extend(replace(finding, ranks=(rank,)) for finding in part.evidence)
        return cls(
            findings=list(findings),
            evidence=list(evidence),
            seen=set().union(*(part.seen for _, part in parts)),
            files=sorted({file for _, part in parts for file in part.files}),
            stopped_by=next((part.stopped_by for _, part in parts if part.stopped_by), None),
        )
