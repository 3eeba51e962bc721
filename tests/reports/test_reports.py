"""Each report format validates against its schema or parser, and says what the run said.

No schema library is a dependency, so this file carries two small validators: one for
the XSD subset that tests/data/junit.xsd uses, one for the JSON Schema subset that the
schemas in docs/ use. Each is itself tested on documents it must reject.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import pytest

import support
from cer.constraints import suite_coverage
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import CaseResult, RunResult, Status
from cer.reports import (
    FORMATS,
    ReportContext,
    ReportRequest,
    parse_report_spec,
    render_report,
    results_document,
    write_report,
)
from cer.reports.github import escape_data, escape_property
from cer.reports.manifest import manifest_document
from cer.results.serialize import run_from_dict
from cer.suite.loader import load_suite
from cer.suite.selection import Selection
from support import Module

ROOT = support.ROOT
DATA = support.DATA
XS = "{http://www.w3.org/2001/XMLSchema}"

# --- a validator for the XSD subset of tests/data/junit.xsd ----------------------------


class XsdSubset:
    """Global elements with inline complex types (sequence/choice of element refs with
    occurrence bounds, attributes with ``use``, simple content) and simple types derived
    by restriction (``pattern``, ``minInclusive``) from a few built-in types. Anything
    else in the schema is refused, so the validator never silently ignores a rule."""

    BUILTINS: Mapping[str, Callable[[str], bool]] = {
        "string": lambda v: True,
        "decimal": lambda v: re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", v) is not None,
        "nonNegativeInteger": lambda v: re.fullmatch(r"\+?\d+", v) is not None,
        "positiveInteger": lambda v: re.fullmatch(r"\+?\d+", v) is not None and int(v) > 0,
    }

    def __init__(self, path: Path) -> None:
        root = ET.parse(path).getroot()
        self.elements = {el.get("name"): el for el in root.findall(f"{XS}element")}
        self.simple = {el.get("name"): el for el in root.findall(f"{XS}simpleType")}
        for child in root:
            if child.tag not in (f"{XS}element", f"{XS}simpleType"):
                raise ValueError(f"unsupported schema construct {child.tag}")

    def check_value(self, type_name: str, value: str) -> bool:
        local = type_name.removeprefix("xs:")
        if type_name.startswith("xs:"):
            if local not in self.BUILTINS:
                raise ValueError(f"unsupported built-in type {type_name}")
            return self.BUILTINS[local](value)
        restriction = self.simple[type_name].find(f"{XS}restriction")
        assert restriction is not None
        if not self.check_value(restriction.get("base", ""), value):
            return False
        for facet in restriction:
            bound = facet.get("value", "")
            if facet.tag == f"{XS}pattern":
                if re.fullmatch(bound, value) is None:
                    return False
            elif facet.tag == f"{XS}minInclusive":
                try:
                    if Decimal(value) < Decimal(bound):
                        return False
                except InvalidOperation:
                    return False
            else:
                raise ValueError(f"unsupported facet {facet.tag}")
        return True

    def validate(self, document: ET.Element) -> list[str]:
        errors: list[str] = []
        if document.tag not in self.elements:
            return [f"unknown root element <{document.tag}>"]
        self._element(document, self.elements[document.tag], errors)
        return errors

    def _element(self, node: ET.Element, decl: ET.Element, errors: list[str]) -> None:
        where = f"<{node.tag} name={node.get('name')!r}>"
        simple_type = decl.get("type")
        if simple_type is not None:
            if len(node) or node.attrib:
                errors.append(f"{where}: must hold text only")
            elif not self.check_value(simple_type, node.text or ""):
                errors.append(f"{where}: text is not {simple_type}")
            return
        complex_type = decl.find(f"{XS}complexType")
        assert complex_type is not None
        model = complex_type.find(f"{XS}sequence")
        simple = complex_type.find(f"{XS}simpleContent")
        attributes = complex_type.findall(f"{XS}attribute")
        if simple is not None:
            extension = simple.find(f"{XS}extension")
            assert extension is not None
            attributes = extension.findall(f"{XS}attribute")
            if len(node):
                errors.append(f"{where}: must not have child elements")
            if not self.check_value(extension.get("base", ""), node.text or ""):
                errors.append(f"{where}: text is not {extension.get('base')}")
        else:
            if (node.text or "").strip():
                errors.append(f"{where}: must not hold text")
            children = list(node)
            for child in children:
                if (child.tail or "").strip():
                    errors.append(f"{where}: must not hold text")
            if model is None:
                if children:
                    errors.append(f"{where}: must be empty")
            else:
                ends = self._match(model, [c.tag for c in children], 0)
                if len(children) not in ends:
                    errors.append(
                        f"{where}: children {[c.tag for c in children]} do not "
                        "follow the content model"
                    )
            for child in children:
                if child.tag in self.elements:
                    self._element(child, self.elements[child.tag], errors)
        declared = {a.get("name"): a for a in attributes}
        for name, value in node.attrib.items():
            if name not in declared:
                errors.append(f"{where}: attribute {name!r} is not allowed")
            elif not self.check_value(declared[name].get("type", "xs:string"), value):
                errors.append(
                    f"{where}: attribute {name}={value!r} is not {declared[name].get('type')}"
                )
        for name, attribute in declared.items():
            if attribute.get("use") == "required" and name not in node.attrib:
                errors.append(f"{where}: attribute {name!r} is required")

    def _match(self, particle: ET.Element, tags: list[str], start: int) -> set[int]:
        """Every position the particle can end at, starting at ``start``."""
        low = int(particle.get("minOccurs", "1"))
        high_text = particle.get("maxOccurs", "1")
        high = len(tags) + 1 if high_text == "unbounded" else int(high_text)
        ends: set[int] = set()
        frontier = {start}
        for count in range(high + 1):
            if count >= low:
                ends |= frontier
            if count == high or not frontier:
                break
            frontier = {e for s in frontier for e in self._once(particle, tags, s)}
        return ends

    def _once(self, particle: ET.Element, tags: list[str], start: int) -> set[int]:
        if particle.tag == f"{XS}element":
            ref = particle.get("ref")
            return {start + 1} if start < len(tags) and tags[start] == ref else set()
        if particle.tag == f"{XS}sequence":
            positions = {start}
            for item in particle:
                positions = {e for p in positions for e in self._match(item, tags, p)}
            return positions
        if particle.tag == f"{XS}choice":
            return {e for item in particle for e in self._match(item, tags, start)}
        raise ValueError(f"unsupported particle {particle.tag}")


# --- a validator for the JSON Schema subset of docs/*.schema.json -----------------------


def json_schema_errors(
    value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], where: str = "$"
) -> list[str]:
    """type, const, enum, properties, required, additionalProperties, items, anyOf,
    minimum, minLength, pattern, $ref (local); annotations are ignored, and any other
    keyword is refused so that no rule is silently skipped."""
    known = {
        "$schema",
        "$id",
        "$defs",
        "title",
        "description",
        "type",
        "const",
        "enum",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "minimum",
        "minLength",
        "pattern",
        "$ref",
    }
    unknown = set(schema) - known
    if unknown:
        raise ValueError(f"unsupported JSON Schema keywords {sorted(unknown)} at {where}")
    errors: list[str] = []
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        errors += json_schema_errors(value, target, root, where)
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        checks = {
            "object": lambda v: isinstance(v, dict),
            "array": lambda v: isinstance(v, list),
            "string": lambda v: isinstance(v, str),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
        }
        if not any(checks[name](value) for name in names):
            return [*errors, f"{where}: {value!r:.60} is not {types}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: must be {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "anyOf" in schema and not any(
        not json_schema_errors(value, option, root, where) for option in schema["anyOf"]
    ):
        errors.append(f"{where}: matches none of anyOf")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                errors.append(f"{where}: {name!r} is required")
        for name, item in value.items():
            if name in properties:
                errors += json_schema_errors(item, properties[name], root, f"{where}.{name}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: {name!r} is not allowed")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            errors += json_schema_errors(item, schema["items"], root, f"{where}[{index}]")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{where}: below {schema['minimum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: too short")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            errors.append(f"{where}: does not match {schema['pattern']}")
    return errors


def validate_json(document: Any, schema_name: str) -> list[str]:
    schema = json.loads((ROOT / "docs" / schema_name).read_text(encoding="utf-8"))
    return json_schema_errors(document, schema, schema)


# --- a TAP 14 parser --------------------------------------------------------------------

_POINT = re.compile(
    r"^(?P<ok>not ok|ok)(?: (?P<num>\d+))?(?: -)?(?P<desc>(?:[^#\\]|\\.)*)"
    r"(?:#\s*(?P<dir>SKIP|TODO)\S*\s*(?P<why>.*))?$",
    re.IGNORECASE,
)


def parse_tap(text: str) -> dict[str, Any]:
    """A strict TAP 14 reader: version line, one plan, numbered points, YAML blocks."""
    lines = text.split("\n")
    assert lines[-1] == "", "the stream ends with a newline"
    lines = lines[:-1]
    assert lines[0] == "TAP version 14"
    plan = None
    points: list[dict[str, Any]] = []
    index = 1
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith("#"):
            continue
        if re.fullmatch(r"1\.\.\d+", line):
            assert plan is None, "one plan only"
            plan = int(line[3:])
            continue
        match = _POINT.match(line)
        assert match is not None, f"not a TAP line: {line!r}"
        description = re.sub(r"\\(.)", r"\1", match["desc"].strip())
        point: dict[str, Any] = {
            "ok": match["ok"] == "ok",
            "number": int(match["num"]),
            "description": description,
            "directive": (match["dir"] or "").upper() or None,
            "reason": (match["why"] or "").strip(),
            "yaml": None,
        }
        if index < len(lines) and lines[index] == "  ---":
            end = lines.index("  ...", index)
            point["yaml"] = _parse_yaml_block(lines[index + 1 : end])
            index = end + 1
        points.append(point)
    assert plan is not None
    assert plan == len(points), "the plan counts every point"
    assert [p["number"] for p in points] == list(range(1, plan + 1))
    return {"plan": plan, "points": points}


def _parse_yaml_block(lines: list[str]) -> dict[str, Any]:
    """The block cer writes: ``key: JSON scalar`` at two spaces, one level of nesting
    (a mapping or a list of mappings) below it."""
    data: dict[str, Any] = {}
    current: Any = None
    for line in lines:
        assert line.startswith("  "), f"YAML outside the block's indentation: {line!r}"
        body = line[2:]
        if not body.startswith(" "):
            key, _, value = body.partition(": ")
            if value:
                data[key] = json.loads(value)
            else:
                current = key.rstrip(":")
                data[current] = []
            continue
        nested = body.strip()
        container = data[current]
        if nested.startswith("- "):
            key, _, value = nested[2:].partition(": ")
            container.append({key: json.loads(value)})
        elif isinstance(container, list) and container and body.startswith("    "):
            key, _, value = nested.partition(": ")
            container[-1][key] = json.loads(value)
        else:
            key, _, value = nested.partition(": ")
            if isinstance(container, list) and not container:
                data[current] = container = {}
            container[key] = json.loads(value)
    return data


# --- the run the reports are made from ------------------------------------------------

SUITE = """
commonsformat_evals = "0.2"
target = "demo"
target_version = "^1.0"

[[cases]]
name = "passes"
category = "functional"
input = { x = 2 }
expect = { output = 4 }
verifies = ["doubles"]

[[cases]]
name = "fails # loudly, 100%"
category = "functional"
input = { x = 3 }
expect = { output = 7 }
verifies = ["doubles"]

[[cases]]
name = "needs-a-fixture"
category = "functional"
input = { x = "fixture://absent.txt" }
expect = { output = 1 }

[[cases]]
name = "not-selected"
category = "functional"
input = { x = 5 }
expect = { output = 10 }

[[adversarial]]
name = "unsupported-area"
category = "concurrency"
input = { x = 1 }
expect = { output = 2 }
verifies = ["doubels"]
"""

IMPL = """
import sys

def f(x):
    if x == 3:
        print("noisy\\x01 <&> output")
        print("on stderr", file=sys.stderr)
    return x * 2
"""

MODULE_DOC = """
<constraints>
- doubles: the output is twice the input.
- never-negative: the output is never negative.
</constraints>
"""


@pytest.fixture
def context(module: Module) -> ReportContext:
    module.suite(SUITE)
    (module.root / "commonsformat.md").write_text(MODULE_DOC, encoding="utf-8")
    impl = module.impl(IMPL)
    suite = load_suite(module.root / "evals.toml")
    selection = Selection(case_globs=("passes", "fails*", "needs-*", "unsupported-*"))
    run = run_suite(suite, RunOptions(impl=f"{impl}:f", timeout=5.0, selection=selection))
    statuses = [r.status for r in run.results]
    assert statuses == [Status.PASS, Status.FAIL, Status.ERRORED, Status.SKIPPED, Status.SKIPPED]
    return ReportContext(
        run, suite, suite_coverage(suite, run), frozenset({"fails # loudly, 100%"})
    )


def constructed(statuses: list[Status]) -> ReportContext:
    """A context with hand-made results, for the verdict rules."""
    suite = load_suite(DATA / "greet" / "evals.toml")
    results = tuple(
        CaseResult(
            case.name,
            case.case_class,
            case.category,
            status,
            "deselected" if status is Status.SKIPPED else None,
            position=case.position,
        )
        for case, status in zip(suite.cases, statuses, strict=True)
    )
    run = RunResult(
        "r",
        "greet",
        "greet:greet@abc",
        0,
        1,
        results,
        suite_hash=suite.content_hash,
        format_version="0.2",
        implementation="greet:greet",
    )
    return ReportContext(run, suite)


# --- junit ------------------------------------------------------------------------------


def test_junit_validates_against_the_schema_and_carries_every_case(
    context: ReportContext,
) -> None:
    text = render_report("junit", context)
    document = ET.fromstring(text.encode("utf-8"))
    assert XsdSubset(DATA / "junit.xsd").validate(document) == []
    assert document.get("tests") == "5" and document.get("failures") == "1"
    assert document.get("errors") == "1" and document.get("skipped") == "2"
    suites = document.findall("testsuite")
    assert [s.get("name") for s in suites] == ["demo.functional", "demo.adversarial"]
    cases = {c.get("name"): c for c in document.iter("testcase")}
    assert list(cases) == [r.case_name for r in context.run.results]
    failing = cases["fails # loudly, 100%"]
    failure = failing.find("failure")
    assert failure is not None and "expected int 7" in (failure.get("message") or "")
    assert failing.get("line") == str(context.suite.cases[1].line)
    out = failing.find("system-out")
    assert out is not None and out.text == "noisy\\x01 <&> output\n"  # escaped, not lost
    err = failing.find("system-err")
    assert err is not None and err.text == "on stderr\n"
    error = cases["needs-a-fixture"].find("error")
    assert error is not None and "missing fixture" in (error.get("message") or "")
    skipped = cases["not-selected"].find("skipped")
    assert skipped is not None and skipped.get("message") == "deselected"
    assert cases["passes"].find("*") is None


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ('<testsuites><testsuite tests="1"/></testsuites>', "'name' is required"),
        ('<testsuites><testsuite name="s" tests="x"/></testsuites>', "tests='x'"),
        (
            '<testsuites><testsuite name="s" tests="1"><testcase name="c"><failure/>'
            "<skipped/></testcase></testsuite></testsuites>",
            "content model",
        ),
        (
            '<testsuites><testsuite name="s" tests="1"><testcase name="c"><system-out/>'
            "<failure/></testcase></testsuite></testsuites>",
            "content model",
        ),
        (
            '<testsuites><testsuite name="s" tests="1"><testcase name="c" line="0"/>'
            "</testsuite></testsuites>",
            "line='0'",
        ),
        (
            '<testsuites><testsuite name="s" tests="1" flavour="x"/></testsuites>',
            "'flavour' is not allowed",
        ),
        ('<testsuites timestamp="yesterday"/>', "timestamp"),
    ],
)
def test_the_junit_schema_check_rejects_bad_documents(bad: str, problem: str) -> None:
    errors = XsdSubset(DATA / "junit.xsd").validate(ET.fromstring(bad))
    assert any(problem in e for e in errors), errors


# --- tap --------------------------------------------------------------------------------


def test_tap_parses_and_says_what_happened(context: ReportContext) -> None:
    parsed = parse_tap(render_report("tap", context))
    points = parsed["points"]
    assert parsed["plan"] == 5
    assert [(p["ok"], p["directive"]) for p in points] == [
        (True, None),
        (False, None),
        (False, None),
        (True, "SKIP"),
        (True, "SKIP"),
    ]
    assert points[1]["description"] == "fails # loudly, 100%"  # '#' escaped, read back
    assert points[3]["reason"] == "deselected"
    assert points[4]["reason"] == "category not supported: concurrency"
    failing = points[1]["yaml"]
    assert failing["severity"] == "fail" and failing["flaky"] is True
    assert "expected int 7" in failing["message"]
    assert failing["at"]["line"] == context.suite.cases[1].line
    assert failing["stdout"] == "noisy\x01 <&> output\n"
    assert failing["mismatches"][0]["path"] == "output"
    assert points[2]["yaml"]["severity"] == "errored"
    assert points[0]["yaml"] is None


# --- json and manifest ----------------------------------------------------------------


def test_json_report_validates_and_reads_back(context: ReportContext) -> None:
    text = render_report("json", context)
    document = json.loads(text)
    assert validate_json(document, "results.schema.json") == []
    assert document == results_document(context)
    assert run_from_dict(document) == context.run
    assert document["flaky"] == ["fails # loudly, 100%"]
    assert [r["flaky"] for r in document["results"]] == [False, True, False, False, False]
    coverage = document["coverage"]
    assert (
        coverage["constraints_total"],
        coverage["constraints_covered"],
        coverage["constraints_verified"],
    ) == (2, 1, 0)
    assert coverage["unknown_references"][0]["constraint"] == "doubels"


def test_json_without_history_or_module_document(context: ReportContext) -> None:
    bare = ReportContext(context.run, context.suite)
    document = results_document(bare)
    assert document["flaky"] is None and document["coverage"] is None
    assert "flaky" not in document["results"][0]
    assert validate_json(document, "results.schema.json") == []


def test_the_json_schema_check_rejects_bad_documents(context: ReportContext) -> None:
    document = results_document(context)
    document["results"][0]["status"] = "passed"
    del document["summary"]["verdict"]
    document["run"]["extra"] = 1
    errors = validate_json(document, "results.schema.json")
    assert any("'passed' is not one of" in e for e in errors)
    assert any("'verdict' is required" in e for e in errors)
    assert any("'extra' is not allowed" in e for e in errors)


def test_manifest_validates_and_holds_the_evidence(context: ReportContext) -> None:
    document = json.loads(render_report("manifest", context))
    assert validate_json(document, "manifest.schema.json") == []
    assert document["target"] == {
        "kind": "commonsformat-module",
        "name": "demo",
        "version": "^1.0",
        "implementation": context.run.implementation,
        "implementation_id": context.run.implementation_id,
        "fingerprint": context.run.implementation_id.rpartition("@")[2],
    }
    assert document["suite"]["sha256"] == context.suite.content_hash
    assert document["suite"]["format_version"] == "0.2"
    assert document["case_classes"] == ["functional", "adversarial"]
    assert [(a["id"], a["result"]) for a in document["assertions"]] == [
        (r.case_name, r.status.value) for r in context.run.results
    ]
    assert (
        document["conformance"]
        == "nonconformant, selection of 4 of 5 cases, coverage incomplete: 1 of 2 constraints "
        "without a case, 1 unknown constraint in verifies"
    )
    assert document["coverage"]["needs_a_case"] == ["never-negative"]
    assert not {"trusted", "approved", "signature", "signed"} & _all_keys(document)


def _all_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _all_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _all_keys(v)}
    return set()


@pytest.mark.parametrize(
    ("statuses", "conformance"),
    [
        ([Status.PASS] * 4, "conformant"),
        (
            [Status.PASS, Status.PASS, Status.SKIPPED, Status.PASS],
            "incomplete, selection passed: 3 of 4 cases",
        ),
        (
            [Status.PASS, Status.FAIL, Status.SKIPPED, Status.PASS],
            "nonconformant, selection of 3 of 4 cases",
        ),
        ([Status.PASS, Status.PASS, Status.PASS, Status.ERRORED], "nonconformant"),
    ],
)
def test_manifest_conformance(statuses: list[Status], conformance: str) -> None:
    document = manifest_document(constructed(statuses))
    assert document["conformance"] == conformance
    assert validate_json(document, "manifest.schema.json") == []


# --- github -----------------------------------------------------------------------------


def test_github_annotations_point_at_the_case_line(
    context: ReportContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(context.suite.path.parent.parent)
    lines = render_report("github", context).splitlines()
    file = f"{context.suite.path.parent.name}/evals.toml"
    failing = context.suite.cases[1]
    reason = context.run.results[1].reason or ""
    assert lines[0] == (
        f"::error file={file},line={failing.line},title=cer%3A fails # loudly%2C 100%25 "
        f"failed (flaky)::fails # loudly, 100%25: {escape_data(reason)}"
    )
    assert lines[1].startswith(f"::error file={file},line={context.suite.cases[2].line},")
    assert lines[2].startswith("::warning ") and "category not supported" in lines[2]
    assert "not-selected" not in "\n".join(lines)  # deselection is not a problem
    assert lines[3].startswith("::error ") and '"doubels"' in lines[3]
    assert lines[4].startswith("::notice title=cer::demo")
    assert len(lines) == 5


def test_github_escaping() -> None:
    assert escape_data("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext: a, b"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


# --- the registry and writing -----------------------------------------------------------


def test_report_specs() -> None:
    assert parse_report_spec("junit").path == "cer-junit.xml"
    assert parse_report_spec("github").to_stdout
    assert parse_report_spec("TAP=out/r.tap").path == "out/r.tap"
    assert parse_report_spec("json=-").to_stdout
    with pytest.raises(ValueError, match="known: junit"):
        parse_report_spec("xml")
    with pytest.raises(ValueError, match="needs a path"):
        parse_report_spec("junit=")
    # Which formats there are is held against docs/reports.md's table of them
    # (tests/docs/test_extension_points.py); here, each of the table's is named as itself.
    for name, report_format in FORMATS.items():
        unavailable = report_format.unavailable
        if unavailable is not None and unavailable() is not None:
            continue  # refused with how to install what it needs, tested on its own
        assert parse_report_spec(name.upper()) == ReportRequest(name, report_format.default_path)


def test_write_report_replaces_whole_files(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "report.xml"
    write_report("first\n", target)
    write_report("second\n", target)
    assert target.read_text() == "second\n"
    assert [p.name for p in target.parent.iterdir()] == ["report.xml"]


def test_every_format_renders_a_run_with_no_history_or_coverage() -> None:
    bare = constructed([Status.PASS, Status.FAIL, Status.SKIPPED, Status.ERRORED])
    for name in FORMATS:
        assert render_report(name, bare).endswith("\n"), name
    assert XsdSubset(DATA / "junit.xsd").validate(ET.fromstring(render_report("junit", bare))) == []
    assert parse_tap(render_report("tap", bare))["plan"] == 4
