"""JUnit XML, for CI systems that show test reports: one test suite per file, one failing
test case per finding, and one passing case when there are none."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import groupby

from rich.console import Console

from gpumem_lint.diagnostics import Diagnostic
from gpumem_lint.output.concise import printable, where


def render(diagnostics: Sequence[Diagnostic], console: Console) -> None:
    ordered = sorted(diagnostics, key=lambda diagnostic: diagnostic.sort_key)
    count = str(max(1, len(ordered)))
    suites = ET.Element("testsuites", name="gpumem-lint", tests=count, failures=str(len(ordered)), errors="0")
    if not ordered:
        suite = ET.SubElement(suites, "testsuite", name="gpumem-lint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="No problems found", classname="gpumem-lint")
    for path, group in groupby(ordered, key=lambda diagnostic: diagnostic.path):
        findings = list(group)
        name = printable(path)
        suite = ET.SubElement(
            suites, "testsuite", name=name, tests=str(len(findings)), failures=str(len(findings)), errors="0"
        )
        for diagnostic in findings:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"gpumem-lint.{diagnostic.code}",
                classname=name,
                file=name,
                line=str(diagnostic.start.row),
                column=str(diagnostic.start.column),
            )
            failure = ET.SubElement(case, "failure", message=printable(diagnostic.message), type=diagnostic.code)
            failure.text = printable(
                f"{where(diagnostic)}: {diagnostic.code} {diagnostic.message}"
                + (f"\nhelp: {diagnostic.help}" if diagnostic.help else "")
            )
    ET.indent(suites)
    console.out('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode"), highlight=False)
