"""Reports of one run for CI and audit: ``cer run --report FORMAT[=PATH]``.

Every format renders the same :class:`ReportContext` (the run, its suite, constraint
coverage, the flaky cases known from history) to text; the registry :data:`FORMATS`
names them and their default destinations. Formats never judge: they print what the run
reported. See docs/reports.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from cer.reports.context import ReportContext, iso_time, suite_display_path
from cer.results import serialize
from cer.text.safetext import for_json

__all__ = [
    "FORMATS",
    "STDOUT",
    "ReportContext",
    "ReportFormat",
    "ReportRequest",
    "iso_time",
    "parse_report_spec",
    "render_report",
    "results_document",
    "suite_display_path",
    "write_report",
]

STDOUT = "-"
"""The destination that means standard output."""


@dataclass(frozen=True)
class ReportFormat:
    """One report format: its name, where it goes by default, and how it renders."""

    name: str
    description: str
    default_path: str
    render: Callable[[ReportContext], str]
    line_oriented: bool = False
    """Whether it may share stdout with the text report (GitHub annotations may)."""
    unavailable: Callable[[], str | None] | None = None
    """Why the format cannot be written here (a missing optional dependency), or None;
    asked when the report is requested, before anything runs."""
    needs_history: bool = False
    """Whether it shows the recorded runs (:attr:`ReportContext.history`)."""


@dataclass(frozen=True)
class ReportRequest:
    """One ``--report FORMAT[=PATH]``; ``path`` is ``-`` for standard output."""

    format: str
    path: str

    @property
    def to_stdout(self) -> bool:
        return self.path == STDOUT


def results_document(context: ReportContext) -> dict[str, Any]:
    """The full results structure (``--format json`` and ``--report json``).

    ``serialize.run_to_dict`` plus ``coverage`` (null without a module document),
    ``conformance`` (the verdict with its qualifiers), ``baseline`` (null without one)
    and ``flaky`` (null without history), each result's case ``input`` and
    ``expected`` (its expect table), and a ``flaky`` flag on each result when known.
    """
    document = serialize.run_to_dict(context.run)
    # Each case's input and expect beside what was observed, passes included: the
    # document then says why each case passed or failed, not only that it did.
    cases = {case.name: case for case in context.suite.cases}
    for item in document["results"]:
        case = cases.get(item["case_name"])
        item["input"] = None if case is None else serialize.value_to_json(dict(case.input))
        item["expected"] = None if case is None else serialize.value_to_json(dict(case.expect))
    document["coverage"] = None if context.coverage is None else context.coverage.to_dict()
    verdict = context.verdict()
    # The summary's word is the verdict's, decided once (cer.results.conformance).
    document["summary"]["verdict"] = verdict.word
    document["conformance"] = verdict.to_dict()
    document["baseline"] = None if verdict.baseline is None else verdict.baseline.to_dict()
    if context.flaky is None:
        document["flaky"] = None
    else:
        document["flaky"] = [
            r.case_name for r in context.run.results if r.case_name in context.flaky
        ]
        for item in document["results"]:
            item["flaky"] = item["case_name"] in context.flaky
    return document


def _render_json(context: ReportContext) -> str:
    return (
        for_json(
            json.dumps(results_document(context), indent=2, ensure_ascii=False, allow_nan=False)
        )
        + "\n"
    )


def _renderer(module: str) -> Callable[[ReportContext], str]:
    """The ``render`` of ``cer.reports.<module>``, imported when a report of that format
    is first rendered: a run that writes no report imports no writer (the XML, HTML
    and manifest writers cost more to import than a one-case run takes)."""

    def render(context: ReportContext) -> str:
        writer: Callable[[ReportContext], str] = import_module(f"cer.reports.{module}").render
        return writer(context)

    return render


def _html_unavailable() -> str | None:
    """Why the HTML report cannot be written here (see
    :func:`cer.reports.html.missing_dependency`), asked only when it is requested."""
    from cer.reports import html

    return html.missing_dependency()


def _formats() -> dict[str, ReportFormat]:
    return {
        "junit": ReportFormat(
            "junit", "JUnit XML for CI test reports", "cer-junit.xml", _renderer("junit")
        ),
        "json": ReportFormat(
            "json", "the full results structure", "cer-results.json", _render_json
        ),
        "tap": ReportFormat("tap", "TAP version 14", "cer-results.tap", _renderer("tap")),
        "manifest": ReportFormat(
            "manifest",
            "the evidence manifest (JSON)",
            "cer-manifest.json",
            _renderer("manifest"),
        ),
        "github": ReportFormat(
            "github",
            "GitHub Actions workflow annotations",
            STDOUT,
            _renderer("github"),
            line_oriented=True,
        ),
        "markdown": ReportFormat(
            "markdown",
            "Markdown for a CI job summary or a pull request comment",
            "cer-summary.md",
            _renderer("markdown"),
        ),
        "html": ReportFormat(
            "html",
            "a self-contained HTML page with charts",
            "cer-report.html",
            _renderer("html"),
            unavailable=_html_unavailable,
            needs_history=True,
        ),
    }


FORMATS: Mapping[str, ReportFormat] = _formats()
"""Report formats by name."""


def parse_report_spec(text: str) -> ReportRequest:
    """``FORMAT`` or ``FORMAT=PATH`` (``-`` is stdout); ValueError naming the formats,
    or saying how to install what a format needs."""
    name, sep, path = text.partition("=")
    name = name.strip().lower()
    if name not in FORMATS:
        known = ", ".join(FORMATS)
        raise ValueError(f"unknown report format {name!r} (known: {known})")
    if sep and not path:
        raise ValueError(f"--report {name}= needs a path (or - for standard output)")
    unavailable = FORMATS[name].unavailable
    problem = unavailable() if unavailable is not None else None
    if problem is not None:
        raise ValueError(problem)
    return ReportRequest(name, path if sep else FORMATS[name].default_path)


def render_report(name: str, context: ReportContext) -> str:
    """The report ``name`` as text; KeyError for an unknown format."""
    return FORMATS[name].render(context)


def write_report(text: str, path: str | Path) -> None:
    """Write a report file whole: to a temporary sibling, then renamed into place, so
    that a reader never sees half a report. Creates missing parent folders."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        # A character UTF-8 cannot hold (a lone surrogate) is written as its escape
        # rather than losing the whole report.
        with os.fdopen(
            handle, "w", encoding="utf-8", errors="backslashreplace", newline=""
        ) as stream:
            stream.write(text)
        try:
            mode = target.stat().st_mode & 0o777
        except OSError:
            mode = 0o644
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
