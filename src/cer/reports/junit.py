"""JUnit XML, the test report format GitHub Actions, GitLab and Jenkins read.

One ``<testsuite>`` per case class present, one ``<testcase>`` per case in declared
order. A failed case carries ``<failure>``, an errored one ``<error>``, a skipped one
``<skipped>``, each with the reason as ``message`` (and a failure or error its fail
class, :data:`cer.model.FailClass`, as ``type``); the case's stdout and stderr go to
``<system-out>`` and ``<system-err>``. Characters XML 1.0 cannot carry, and those that
act on a terminal or reorder a line (control and bidi characters), are written as
``\\xNN`` escapes rather than dropped, so that nothing captured disappears unnoticed.
"""

from __future__ import annotations

import json
import re
import socket
import xml.etree.ElementTree as ET

from cer.judge.verdict import REPORTED_NOTE
from cer.model import CASE_CLASSES, CaseResult, Status
from cer.reports.context import ReportContext, iso_time, suite_display_path
from cer.text.safetext import for_terminal
from cer.text.tomltext import input_line

__all__ = ["render"]

_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    """``text`` with what :func:`cer.text.safetext.for_terminal` escapes (control and bidi
    characters, lone surrogates: a CI page or log shows the report) and every other
    character XML 1.0 forbids replaced by a visible escape."""
    return _ILLEGAL.sub(lambda m: f"\\x{ord(m.group()):02x}", for_terminal(text))


def _seconds(ms: int | float | None) -> str:
    return f"{(ms or 0) / 1000:.3f}"


def _detail(result: CaseResult, input_text: str) -> str:
    """The body of a failure or error: the reason, each mismatch, the case's input
    (:func:`cer.text.tomltext.input_line`), the traceback."""
    parts = [result.reason or ""]
    for mismatch in result.mismatches:
        line = mismatch.message
        if mismatch.path and not line.startswith(mismatch.path):
            line = f"{mismatch.path}: {line}"
        if line not in parts[0]:
            parts.append(line)
    parts.append(input_text)
    if result.traceback:
        parts.append(result.traceback)
    return "\n".join(part for part in parts if part)


def render(context: ReportContext) -> str:
    """The run as a JUnit XML document."""
    run, suite = context.run, context.suite
    summary = run.summary
    target = run.target_module
    file = suite_display_path(suite)
    cases = {case.name: case for case in suite.cases}
    verdict = context.verdict().statement
    root = ET.Element(
        "testsuites",
        {
            "name": xml_safe(f"{target} · {run.implementation_id}"),
            "tests": str(summary.total),
            "failures": str(summary.failed),
            "errors": str(summary.errored),
            "skipped": str(summary.skipped),
            "time": _seconds(run.completed_at_ms - run.started_at_ms),
            "timestamp": iso_time(run.started_at_ms),
        },
    )
    for index, case_class in enumerate(CASE_CLASSES):
        results = [r for r in run.results if r.case_class == case_class]
        if not results:
            continue
        counts = {status: sum(1 for r in results if r.status is status) for status in Status}
        suite_el = ET.SubElement(
            root,
            "testsuite",
            {
                "name": f"{target}.{case_class}",
                "tests": str(len(results)),
                "failures": str(counts[Status.FAIL]),
                "errors": str(counts[Status.ERRORED]),
                "skipped": str(counts[Status.SKIPPED]),
                "time": _seconds(sum(r.elapsed_ms or 0 for r in results)),
                "timestamp": iso_time(run.started_at_ms),
                "hostname": xml_safe(socket.gethostname() or "localhost"),
                "id": str(index),
                "package": xml_safe(target),
                "file": xml_safe(file),
            },
        )
        properties = ET.SubElement(suite_el, "properties")
        for name, value in (
            ("run_id", run.run_id),
            ("implementation", run.implementation),
            ("implementation_id", run.implementation_id),
            ("suite", file),
            ("suite_hash", run.suite_hash),
            ("suite_format_version", run.format_version),
            ("target_version", suite.target_version or ""),
            ("verdict", verdict),
        ):
            ET.SubElement(properties, "property", {"name": name, "value": xml_safe(value)})
        if run.conditions is not None:
            # What the run ran under, each condition a property of its own (lists and
            # tables as JSON), as the results document's conditions hold them.
            for key, condition in run.conditions.to_dict().items():
                said = (
                    condition
                    if isinstance(condition, str)
                    else json.dumps(condition, ensure_ascii=False)
                )
                ET.SubElement(
                    properties, "property", {"name": f"conditions.{key}", "value": xml_safe(said)}
                )
        for note in run.notes:
            # A cause said once (an implementation that could not be loaded or started),
            # where each of its cases says only "not run: <cause>".
            ET.SubElement(properties, "property", {"name": "note", "value": xml_safe(note)})
        for result in results:
            attributes = {
                "name": xml_safe(result.case_name),
                "classname": xml_safe(f"{target}.{case_class}"),
                "time": _seconds(result.elapsed_ms),
                "file": xml_safe(file),
            }
            case = cases.get(result.case_name)
            input_text = ""
            if case is not None and case.line:
                attributes["line"] = str(case.line)
            if case is not None:
                where = f"{suite.path.name}:{case.line}" if case.line else suite.path.name
                input_text = input_line(case.input, where)
            case_el = ET.SubElement(suite_el, "testcase", attributes)
            reason = xml_safe(result.reason or "")
            if result.status is Status.FAIL:
                kind: str = result.fail_class or "fail"
                element = ET.SubElement(case_el, "failure", {"message": reason, "type": kind})
                element.text = xml_safe(_detail(result, input_text))
            elif result.status is Status.ERRORED:
                kind = result.fail_class or "errored"
                element = ET.SubElement(case_el, "error", {"message": reason, "type": kind})
                element.text = xml_safe(_detail(result, input_text))
            elif result.status is Status.SKIPPED:
                ET.SubElement(case_el, "skipped", {"message": reason})
            elif REPORTED_NOTE in reason:
                # A pass on a measurement-like key is the implementation's word about itself.
                properties = ET.SubElement(case_el, "properties")
                ET.SubElement(properties, "property", {"name": "reported", "value": reason})
            if result.stdout:
                ET.SubElement(case_el, "system-out").text = xml_safe(result.stdout)
            if result.stderr:
                ET.SubElement(case_el, "system-err").text = xml_safe(result.stderr)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
