"""The streamed results of a run (``cer run --format jsonl``): one JSON document a line.

A run's JSON report (:mod:`cer.results.serialize`) is written whole when the run ends, so a run
that is killed or times out leaves nothing. The JSON-lines form is written as the run
goes, one line per fact as soon as it is known, each line flushed on its own:

- a ``header`` line when the run starts: the format, the run's id, the suite (path,
  content hash, format version), the implementation as named, the conditions it runs
  under as known then, and how many cases the suite declares;
- a ``result`` line for every case, in declared order: a case's line is written as
  soon as its result and the results of every case declared before it are known (with
  several workers a result that comes in early waits for those before it), with the
  same fields as a result of the JSON report, its ``position`` included;
- a ``trailer`` line when the run ends: the ``run`` table, the ``summary``, ``coverage``
  and ``flaky`` of the JSON report.

A file without its trailer is the record of a run that did not finish: every line in it
is whole and true (the results that were waiting for an earlier case when the run was
stopped are written then, still in declared order, after the gap), but it says nothing
about the cases it does not list, and
:func:`read_lines` reports it as unfinished (``cer merge`` refuses it, saying so). The
schema is docs/results-lines.schema.json; docs/reports.md describes it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cer.events import CaseFinished, RunEvent, RunStarted
from cer.model import Case, RunResult, Suite
from cer.results import serialize
from cer.text.safetext import for_json

__all__ = ["FORMAT", "FORMAT_VERSION", "LineWriter", "LinesRead", "read_lines"]

FORMAT = "cer-results-lines"
FORMAT_VERSION = 1


def _line(document: Mapping[str, Any]) -> bytes:
    """One document as one line of UTF-8, the characters that act on a terminal (a lone
    surrogate, ESC, bidi controls, the line separators) written as JSON escapes."""
    text = for_json(
        json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    )
    return (text + "\n").encode("utf-8", "backslashreplace")


class LineWriter:
    """Writes a run's lines to ``write`` (one call per line, each a whole line) as the
    run's events arrive; :meth:`finish` writes the trailer."""

    def __init__(self, write: Callable[[bytes], None], suite: Suite) -> None:
        self._write = write
        self._cases: dict[str, Case] = {case.name: case for case in suite.cases}
        self._declared = frozenset(case.position for case in suite.cases)
        """The declared positions, for a lookup per result."""
        self._order = sorted(self._declared)
        """The declared positions, in order: lines go out in this order."""
        self._next = 0
        """Index in ``_order`` of the first position whose line is not written yet."""
        self._waiting: dict[int, bytes] = {}
        """Lines of results that came in before a result declared earlier, by position."""
        self.written = 0
        """Result lines written so far."""

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, RunStarted):
            suite = event.suite
            self._write(
                _line(
                    {
                        "type": "header",
                        "format": FORMAT,
                        "format_version": FORMAT_VERSION,
                        "run_id": event.run_id,
                        "implementation": event.implementation,
                        "suite_path": str(suite.path),
                        "suite_hash": suite.content_hash,
                        "suite_format_version": suite.format_version,
                        "target_module": suite.target or suite.directory.name,
                        "cases_total": event.total,
                        "conditions": None
                        if event.conditions is None
                        else event.conditions.to_dict(),
                    }
                )
            )
        elif isinstance(event, CaseFinished):
            item = serialize.result_to_dict(event.result)
            case = self._cases.get(event.result.case_name)
            item["input"] = None if case is None else serialize.value_to_json(dict(case.input))
            item["expected"] = None if case is None else serialize.value_to_json(dict(case.expect))
            position = event.result.position
            if position in self._waiting or position not in self._declared:
                self._emit(_line({"type": "result", **item}))  # not a declared position
                return
            self._waiting[position] = _line({"type": "result", **item})
            while self._next < len(self._order) and self._order[self._next] in self._waiting:
                self._emit(self._waiting.pop(self._order[self._next]))
                self._next += 1

    def _emit(self, line: bytes) -> None:
        self._write(line)
        self.written += 1

    def flush(self) -> None:
        """Write the lines still waiting for an earlier case (a run that did not
        finish), in declared order."""
        for position in sorted(self._waiting):
            self._emit(self._waiting.pop(position))

    def finish(self, document: Mapping[str, Any]) -> None:
        """The trailer, from the run's full results document (see
        :func:`cer.reports.results_document`): everything but its results."""
        self.flush()
        self._write(
            _line(
                {
                    "type": "trailer",
                    "run": document["run"],
                    "summary": document["summary"],
                    "coverage": document.get("coverage"),
                    "flaky": document.get("flaky"),
                    **(
                        {"conformance": document["conformance"]}
                        if "conformance" in document
                        else {}
                    ),
                }
            )
        )


def file_writer(path: str | Path) -> tuple[Callable[[bytes], None], Callable[[], None]]:
    """A ``write`` for :class:`LineWriter` that puts each line on disk at once (one
    ``write`` system call per line, no buffer in this process), and its ``close``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    return write, lambda: os.close(fd)


@dataclass(frozen=True)
class LinesRead:
    """What a JSON-lines file holds: the run when it finished (its trailer is there),
    or why it cannot be taken for a whole run."""

    run: RunResult | None
    """The whole run, results in declared order; None when the file is unfinished."""
    results: int
    """How many result lines it holds."""
    total: int
    """How many cases its header says the suite declares."""
    problem: str = ""
    """Why ``run`` is None: the run did not finish, or a line is not what it should be."""


def looks_like_lines(text: str) -> bool:
    """Whether ``text`` starts like a JSON-lines results file (its header line)."""
    first = text.lstrip()[:200]
    return first.startswith("{") and '"type":"header"' in first.replace(" ", "")


def read_lines(text: str) -> LinesRead:
    """Read a JSON-lines results file's text.

    Every line must be whole JSON (a last line cut off by a kill is reported, not
    read); the first is the header, the last the trailer. Without a trailer the file
    is unfinished: :attr:`LinesRead.run` is None and the problem says how many cases it
    has results for. ValueError when it is not such a file at all.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    documents: list[dict[str, Any]] = []
    cut = ""
    for number, line in enumerate(lines, start=1):
        try:
            document = json.loads(line)
        except ValueError as exc:
            if number == len(lines) and not text.endswith("\n"):
                cut = f"its last line (line {number}) is cut off"
                break
            raise ValueError(f"line {number} is not JSON ({exc})") from None
        if not isinstance(document, dict):
            raise ValueError(f"line {number} is not a JSON object")
        documents.append(document)
    if not documents or documents[0].get("type") != "header":
        raise ValueError("its first line is not a header line")
    header = documents[0]
    if header.get("format") != FORMAT:
        raise ValueError(f"its header is not of the {FORMAT} format")
    if header.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"format version {header.get('format_version')!r}; this cer reads {FORMAT_VERSION}"
        )
    total = header.get("cases_total")
    if type(total) is not int:
        raise ValueError("its header has no cases_total")
    results = [d for d in documents[1:] if d.get("type") == "result"]
    trailer = documents[-1] if documents[-1].get("type") == "trailer" else None
    for number, document in enumerate(documents[1:], start=2):
        kind = document.get("type")
        if kind not in ("result", "trailer") or (kind == "trailer" and document is not trailer):
            raise ValueError(f"line {number} is a {kind!r} line where results are expected")
    if trailer is None:
        why = cut or "it has no trailer line"
        return LinesRead(
            None,
            len(results),
            total,
            f"the run did not finish ({why}): {len(results)} of {total} cases have a result",
        )
    for result in results:
        result.pop("type", None)
        result.pop("input", None)
        result.pop("expected", None)
    results.sort(key=lambda item: item.get("position", 0))
    document = {
        "format": serialize.FORMAT,
        "run": trailer["run"],
        "summary": trailer["summary"],
        "results": results,
    }
    run = serialize.run_from_dict(document)
    if len(run.results) != total:
        raise ValueError(f"it has {len(run.results)} results for the {total} cases of its header")
    if run.run_id != header.get("run_id"):
        raise ValueError("its trailer is of another run than its header")
    return LinesRead(run, len(results), total)
