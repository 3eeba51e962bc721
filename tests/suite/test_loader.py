"""Tests for reading ``evals.toml`` files into suites (``cer.suite.loader``)."""

from __future__ import annotations

import dataclasses
import datetime
import gc
import hashlib
import os
import pickle
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from cer.model import Case
from cer.suite import loader as suite_module
from cer.suite.fixtures import resolve_fixtures
from cer.suite.layout import scan_layout_carefully
from cer.suite.loader import (
    SUPPORTED_VERSIONS,
    SuiteError,
    load_suite,
    parse_suite,
)

HEAD = 'commonsformat_evals = "0.2"\ntarget = "demo"\n'


def write(tmp_path: Path, text: str, name: str = "evals.toml") -> Path:
    """Write ``text`` byte for byte (no newline translation) and return the path."""
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def load(tmp_path: Path, text: str) -> Any:
    return load_suite(write(tmp_path, text))


def refuse(tmp_path: Path, text: str) -> SuiteError:
    with pytest.raises(SuiteError) as info:
        load(tmp_path, text)
    return info.value


def case(array: str, name: str, category: str = "functional", extra: str = "") -> str:
    return f'[[{array}]]\nname = "{name}"\ncategory = "{category}"\n{extra}\n'


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the ``occurrence``-th line that equals ``needle`` exactly."""
    seen = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if line == needle:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{needle!r} not found")


# --- case classes, order, positions, lines -------------------------------------------


def test_each_array_gives_its_case_class(tmp_path: Path) -> None:
    text = HEAD + case("cases", "f") + case("adversarial", "a") + case("generator_adversary", "g")
    suite = load(tmp_path, text)
    assert {c.name: c.case_class for c in suite.cases} == {
        "f": "functional",
        "a": "adversarial",
        "g": "generator_adversary",
    }


def test_declared_order_is_the_file_order_across_interleaved_arrays(tmp_path: Path) -> None:
    text = (
        HEAD
        + case("adversarial", "a1", "input-validation")
        + case("cases", "c1")
        + case("adversarial", "a2", "failure-mode")
        + case("generator_adversary", "g1")
        + case("cases", "c2")
    )
    suite = load(tmp_path, text)
    assert [c.name for c in suite.cases] == ["a1", "c1", "a2", "g1", "c2"]
    assert [c.position for c in suite.cases] == [1, 2, 3, 4, 5]
    assert [c.array_index for c in suite.cases] == [1, 1, 2, 1, 2]
    assert [c.line for c in suite.cases] == sorted(c.line or 0 for c in suite.cases)
    assert [c.case_class for c in suite.cases] == [
        "adversarial",
        "functional",
        "adversarial",
        "generator_adversary",
        "functional",
    ]
    assert suite.case("a2").category == "failure-mode"
    assert suite.case("a2").label == '[[adversarial]] #2 "a2"'


def test_lines_point_at_each_case_header(tmp_path: Path) -> None:
    text = (
        HEAD
        + case("generator_adversary", "g1")
        + case("cases", "c1")
        + case("generator_adversary", "g2")
        + case("cases", "c2")
    )
    suite = load(tmp_path, text)
    assert suite.case("g1").line == line_of(text, "[[generator_adversary]]", 1)
    assert suite.case("g2").line == line_of(text, "[[generator_adversary]]", 2)
    assert suite.case("c1").line == line_of(text, "[[cases]]", 1)
    assert suite.case("c2").line == line_of(text, "[[cases]]", 2)
    assert suite.case("g1").line == 3


def test_header_inside_multiline_strings_is_not_a_case(tmp_path: Path) -> None:
    text = (
        HEAD
        + "# [[adversarial]] in a comment\n"
        + case(
            "cases",
            "c1",
            extra='input = { markdown = """\n[[adversarial]]\n[[cases]]\n""" }\n'
            "expect = { html = '''\n  [[cases]]\n[[generator_adversary]]\n''' }",
        )
        + "[[ generator_adversary ]]\n"
        + 'name = "g1"\ncategory = "functional"\n\n'
        + '[["adversarial"]]\nname = "a1"\ncategory = "resource"\n\n'
        + case("cases", "c2")
    )
    suite = load(tmp_path, text)
    assert [c.name for c in suite.cases] == ["c1", "g1", "a1", "c2"]
    assert suite.case("c1").input == {"markdown": "[[adversarial]]\n[[cases]]\n"}
    assert suite.case("c1").expect == {"html": "  [[cases]]\n[[generator_adversary]]\n"}
    assert suite.case("c1").line == line_of(text, "[[cases]]", 1)
    assert suite.case("c2").line == line_of(text, "[[cases]]", 3)
    assert suite.case("g1").line == line_of(text, "[[ generator_adversary ]]")
    assert suite.case("a1").line == line_of(text, '[["adversarial"]]')


def test_triple_quotes_inside_one_line_strings_and_comments_open_nothing(
    tmp_path: Path,
) -> None:
    text = (
        HEAD
        + case("cases", "a", extra="""input = { s = '\"\"\"', t = "'''" }""")
        + case("cases", "b", extra='# a comment with """ in it\nexpect = { html = """x""""" }')
        + case("cases", "c", extra='input = { md = """\n[[cases]]\n""" }')
        + case("cases", "d", extra="""# and ''' here\ninput = { e = "\\"\\"\\"" }""")
        + case("cases", "e", extra="input = { f = '''\n[[cases]]\n'''}")
        + case("cases", "f", extra='input = { g = """a\\\\b \\""" \n[[cases]]\n""" }')
        + case("cases", "g")
    )
    suite = load(tmp_path, text)
    assert suite.case("a").input == {"s": '"""', "t": "'''"}
    assert suite.case("b").expect == {"html": 'x""'}
    assert suite.case("d").input == {"e": '"""'}
    assert suite.case("f").input == {"g": 'a\\b """ \n[[cases]]\n'}
    assert [c.line for c in suite.cases] == [
        line_of(text, "[[cases]]", number) for number in (1, 2, 3, 5, 6, 8, 10)
    ]


def test_inline_array_form_counts_for_order_but_has_no_lines(tmp_path: Path) -> None:
    text = (
        HEAD
        + 'adversarial = [\n  { name = "a1", category = "concurrency" },\n'
        + '  { name = "a2", category = "concurrency" },\n]\n\n'
        + case("cases", "c1")
    )
    suite = load(tmp_path, text)
    assert [c.name for c in suite.cases] == ["a1", "a2", "c1"]
    assert [c.line for c in suite.cases] == [None, None, line_of(text, "[[cases]]")]
    assert [c.array_index for c in suite.cases] == [1, 2, 1]


def test_case_array_names_inside_other_tables_do_not_set_the_order(tmp_path: Path) -> None:
    text = (
        HEAD
        + case("generator_adversary", "g1", extra='input = { md = """\n[[cases]]\n""" }')
        + '[properties]\nadversarial = [\n  "only a note",\n]\n\n'
        + case("cases", "c1")
        + case("adversarial", "a1")
    )
    suite = load(tmp_path, text)
    assert [c.name for c in suite.cases] == ["g1", "c1", "a1"]
    assert suite.properties == {"adversarial": ["only a note"]}
    assert suite.case("c1").line == line_of(text, "[[cases]]", 2)


def test_plain_and_careful_scans_agree(tmp_path: Path) -> None:
    blocks = []
    for number in range(60):
        array = ("cases", "adversarial", "generator_adversary")[number % 3]
        blocks.append(
            case(array, f"n{number}", extra=f'input = {{ s = "#{number}\'" }}\ntags = ["t"]')
        )
    text = HEAD + "".join(blocks)
    suite = load(tmp_path, text)
    order, lines = scan_layout_carefully("\n" + text)
    assert order == ["cases", "adversarial", "generator_adversary"]
    for array, found in lines.items():
        loaded = [c.line for c in suite.cases if f"[[{array}]]" in c.label]
        assert loaded == found


# --- values ---------------------------------------------------------------------------


def test_significant_whitespace_is_kept_exactly(tmp_path: Path) -> None:
    extra = (
        'input = { markdown = "\\tfoo\\tbaz\\t\\tbim\\n" }\n'
        'expect = { html = """\n<pre><code>foo\tbaz\t\tbim\n</code></pre>\n\n""", '
        "raw = '''\n\ttab\\t  \n''', crlf = \"a\\r\\nb\\r\\n\", joined = \"\"\"one \\\n"
        '     two"""}'
    )
    suite = load(tmp_path, HEAD + case("cases", "tabs-001", extra=extra))
    only = suite.case("tabs-001")
    assert only.input == {"markdown": "\tfoo\tbaz\t\tbim\n"}
    assert only.expect["html"] == "<pre><code>foo\tbaz\t\tbim\n</code></pre>\n\n"
    assert only.expect["raw"] == "\ttab\\t  \n"
    assert only.expect["crlf"] == "a\r\nb\r\n"
    assert only.expect["joined"] == "one two"


def test_crlf_file_reads_like_the_toml_parser_and_keeps_lines(tmp_path: Path) -> None:
    text = (
        HEAD + case("cases", "c1") + case("cases", "c2", extra='expect = { s = """\nx\n\ty\n""" }')
    )
    crlf = text.replace("\n", "\r\n")
    suite = load(tmp_path, crlf)
    parsed = tomllib.loads(crlf)
    assert suite.case("c2").expect == parsed["cases"][1]["expect"]
    assert suite.case("c2").expect["s"].endswith("\ty" + parsed["cases"][1]["expect"]["s"][-1])
    assert [c.line for c in suite.cases] == [3, 7]
    assert suite.content_hash == hashlib.sha256(crlf.encode()).hexdigest()


def test_nested_arrays_of_tables_in_input(tmp_path: Path) -> None:
    text = (
        HEAD
        + case(
            "cases", "rows", extra='expect = { count = 2, output = [ { level = 1, key = "a" } ] }'
        )
        + "[cases.input]\nmode = 'index'\n"
        + '[[cases.input.rows]]\nkey = "a"\n[[cases.input.rows.cells]]\nv = 1\n'
        + '[[cases.input.rows]]\nkey = "b"\n\n'
        + case(
            "cases",
            "inline",
            extra="input = { rows = [ { a = 1 }, { b = [ { c = 2 } ] } ], n = 50000 }",
        )
    )
    suite = load(tmp_path, text)
    assert [c.name for c in suite.cases] == ["rows", "inline"]
    assert suite.case("rows").input == {
        "mode": "index",
        "rows": [{"key": "a", "cells": [{"v": 1}]}, {"key": "b"}],
    }
    assert suite.case("rows").expect == {"count": 2, "output": [{"level": 1, "key": "a"}]}
    assert suite.case("inline").input == {"rows": [{"a": 1}, {"b": [{"c": 2}]}], "n": 50000}
    assert suite.case("inline").line == line_of(text, "[[cases]]", 2)


def test_plain_toml_values_are_kept(tmp_path: Path) -> None:
    extra = (
        "input = { when = 1979-05-27T07:32:00Z, day = 1979-05-27, at = 07:32:00, "
        "ratio = 0.5, big = 9_000, flag = true }"
    )
    suite = load(tmp_path, HEAD + case("cases", "values", extra=extra))
    values = suite.case("values").input
    assert values["when"] == datetime.datetime(1979, 5, 27, 7, 32, tzinfo=datetime.UTC)
    assert values["day"] == datetime.date(1979, 5, 27)
    assert values["at"] == datetime.time(7, 32)
    assert (values["ratio"], values["big"], values["flag"]) == (0.5, 9000, True)


def test_optional_fields_and_defaults(tmp_path: Path) -> None:
    full = case(
        "adversarial",
        "full",
        "input-validation",
        extra='description = "One sentence."\nverifies = ["no-crash", "rejects-empty"]\n'
        'tags = ["upstream-section:Tabs"]\nseverity = "critical"\n'
        'input = { items = [] }\nexpect = { rejects = true, error_includes = "empty array" }',
    )
    suite = load(tmp_path, HEAD + full + case("cases", "bare"))
    got = suite.case("full")
    assert got.description == "One sentence."
    assert got.verifies == ("no-crash", "rejects-empty")
    assert got.tags == ("upstream-section:Tabs",)
    assert got.severity == "critical"
    assert got.input == {"items": []}
    assert got.expect == {"rejects": True, "error_includes": "empty array"}
    bare = suite.case("bare")
    assert (bare.input, bare.expect) == ({}, {})
    assert (bare.description, bare.severity, bare.verifies, bare.tags) == (None, None, (), ())
    assert suite.warnings == ()


def test_loaded_cases_are_ordinary_frozen_cases(tmp_path: Path) -> None:
    suite = load(tmp_path, HEAD + case("cases", "c1", extra='tags = ["x"]'))
    got = suite.cases[0]
    expected = Case(
        name="c1",
        case_class="functional",
        category="functional",
        position=1,
        array_index=1,
        input={},
        expect={},
        tags=("x",),
        line=3,
    )
    assert got == expected
    assert repr(got) == repr(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(got, "name", "other")  # noqa: B010 - the point is to bypass typing


def test_top_level_fields(tmp_path: Path) -> None:
    text = (
        'commonsformat_evals = "0.1"\ntarget = "cm2html"\ntarget_version = "^0.1.0"\n'
        '[properties]\nplatform = "linux"\n[adversarial_coverage]\n'
        'categories = ["input-validation", "resource"]\n' + case("cases", "c1")
    )
    suite = load(tmp_path, text)
    assert suite.format_version == "0.1"
    assert (suite.target, suite.target_version) == ("cm2html", "^0.1.0")
    assert suite.properties == {"platform": "linux"}
    assert suite.adversarial_coverage == ("input-validation", "resource")
    assert suite.path == tmp_path / "evals.toml"
    assert suite.warnings == ()


def test_wrong_top_level_types_are_problems(tmp_path: Path) -> None:
    text = (
        'commonsformat_evals = "0.2"\ntarget = 3\ntarget_version = false\nproperties = 1\n'
        "[adversarial_coverage]\ncategories = [1]\n" + case("cases", "c1")
    )
    problems = refuse(tmp_path, text).problems
    assert problems == (
        "target must be a string, not an integer",
        "target_version must be a string, not a boolean",
        "properties must be a table",
        "adversarial_coverage.categories must be a list of strings",
    )


# --- problems -------------------------------------------------------------------------


def test_invalid_toml_names_line_and_column(tmp_path: Path) -> None:
    err = refuse(tmp_path, HEAD + "[[cases]]\nname = \n")
    assert len(err.problems) == 1
    assert err.problems[0].startswith("4:8: invalid TOML: ")
    assert str(err).startswith("evals.toml:4:8: invalid TOML: ")
    assert "(at line" not in str(err)
    assert err.__suppress_context__


def test_invalid_toml_at_end_of_document_still_has_a_location(tmp_path: Path) -> None:
    err = refuse(tmp_path, HEAD + 'x = """never closed\n')
    assert str(err).startswith("evals.toml:")
    assert "invalid TOML" in str(err)
    assert err.problems[0].split(":")[0].isdigit()


def test_standard_library_parser_is_the_fallback(tmp_path: Path) -> None:
    bad_value = write(tmp_path, HEAD + case("cases", "c1") + "[[cases]]\nname = \n", "a.toml")
    unclosed = write(tmp_path, HEAD + 'x = """\nnever closed\n', "b.toml")
    script = (
        "import sys\n"
        "sys.modules['tomli'] = None\n"
        "from cer.suite import loader as suite\n"
        "assert suite._toml.__name__ == 'tomllib', suite._toml\n"
        "print(suite.load_suite(sys.argv[3]).cases[0].line)\n"
        "for name in sys.argv[1:3]:\n"
        "    try:\n"
        "        suite.load_suite(name)\n"
        "    except suite.SuiteError as err:\n"
        "        print(err)\n"
    )
    good = write(tmp_path, HEAD + case("cases", "c1"))
    done = subprocess.run(
        [sys.executable, "-c", script, str(bad_value), str(unclosed), str(good)],
        capture_output=True,
        text=True,
        check=True,
    )
    output = done.stdout.splitlines()
    assert output[0] == "3"
    assert output[1].startswith("a.toml:8:8: invalid TOML: ")
    assert output[2].startswith("b.toml:5:1: invalid TOML: ")


def test_missing_or_empty_name_and_category(tmp_path: Path) -> None:
    text = HEAD + '[[cases]]\ncategory = "functional"\n[[cases]]\nname = "x"\n'
    text += '[[cases]]\nname = ""\ncategory = "  "\n'
    problems = refuse(tmp_path, text).problems
    assert problems == (
        "[[cases]] #1 (line 3): name is required",
        '[[cases]] #2 "x" (line 5): category is required',
        "[[cases]] #3 (line 7): name must be a non-empty string",
        "[[cases]] #3 (line 7): category must be a non-empty string",
    )


def test_duplicate_names_name_both_positions(tmp_path: Path) -> None:
    text = HEAD + case("adversarial", "a") + case("cases", "c1") + case("adversarial", "same")
    text += case("cases", "same") + case("generator_adversary", "same")
    problems = refuse(tmp_path, text).problems
    assert problems == (
        '[[cases]] #2 "same" (line 15, position 4): duplicate name, '
        "already used by [[adversarial]] #2 (line 11, position 3)",
        '[[generator_adversary]] #1 "same" (line 19, position 5): duplicate name, '
        "already used by [[adversarial]] #2 (line 11, position 3)",
    )


def test_input_and_expect_must_be_tables(tmp_path: Path) -> None:
    text = HEAD + case("cases", "a") + case("cases", "b", extra='input = "x"')
    text += case("adversarial", "c") * 0 + case("adversarial", "c1") + case("adversarial", "c2")
    text += case("adversarial", "name-here", extra="expect = [1, 2]")
    err = refuse(tmp_path, text)
    assert err.problems == (
        '[[cases]] #2 "b" (line 7): input must be a table, not a string',
        '[[adversarial]] #3 "name-here" (line 19): expect must be a table, not an array',
    )
    assert 'evals.toml: [[adversarial]] #3 "name-here" (line 19): expect must be a table' in str(
        err
    )


def test_field_type_problems(tmp_path: Path) -> None:
    extra = 'tags = "one"\nverifies = ["a", 2]\ndescription = 5\nseverity = ["critical"]'
    problems = refuse(tmp_path, HEAD + case("generator_adversary", "g", extra=extra)).problems
    assert problems == (
        '[[generator_adversary]] #1 "g" (line 3): description must be a string, not an integer',
        '[[generator_adversary]] #1 "g" (line 3): severity must be a string, not an array',
        '[[generator_adversary]] #1 "g" (line 3): verifies must be a list of strings',
        '[[generator_adversary]] #1 "g" (line 3): tags must be a list of strings',
    )


def test_case_arrays_must_be_arrays_of_tables(tmp_path: Path) -> None:
    text = HEAD + 'adversarial = [1, { name = "ok", category = "resource" }]\n'
    text += '[cases]\nname = "not-an-array"\n'
    problems = refuse(tmp_path, text).problems
    assert problems == (
        "[[cases]] must be an array of tables, not a table",
        "[[adversarial]] #1 must be a table, not an integer",
    )


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = (
        "commonsformat_evals = 2\n"
        + case("cases", "dup")
        + '[[cases]]\nname = "dup"\ncategory = "functional"\ninput = 1\n'
        + '[[adversarial]]\nname = "x"\n'
        + case("generator_adversary", "y", extra="tags = [1]")
    )
    err = refuse(tmp_path, text)
    assert len(err.problems) == 5
    assert err.problems[0].startswith("commonsformat_evals must be a string")
    assert '[[cases]] #2 "dup" (line 6): input must be a table, not an integer' in err.problems
    assert '[[adversarial]] #1 "x" (line 10): category is required' in err.problems
    assert (
        '[[generator_adversary]] #1 "y" (line 12): tags must be a list of strings' in err.problems
    )
    assert (
        '[[cases]] #2 "dup" (line 6, position 2): duplicate name, already used by [[cases]] #1 '
        "(line 2, position 1)" in err.problems
    )
    lines = str(err).splitlines()
    assert len(lines) == len(err.problems)
    assert all(line.startswith("evals.toml: ") for line in lines)


def test_duplicate_is_reported_alongside_other_problems(tmp_path: Path) -> None:
    text = HEAD + case("cases", "dup") + case("cases", "dup") + "[[cases]]\nname = 'z'\n"
    problems = refuse(tmp_path, text).problems
    assert len(problems) == 2
    assert "duplicate name" in problems[0]
    assert problems[1] == '[[cases]] #3 "z" (line 11): category is required'


def test_suite_error_survives_pickling(tmp_path: Path) -> None:
    err = refuse(tmp_path, HEAD + "[[cases]]\n")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.path, copy.problems, str(copy)) == (err.path, err.problems, str(err))


# --- versions and warnings ------------------------------------------------------------


def test_supported_versions() -> None:
    assert SUPPORTED_VERSIONS == ("0.1", "0.2")


def test_unknown_version_is_refused_without_partial_reading(tmp_path: Path) -> None:
    text = 'commonsformat_evals = "0.9"\n[[cases]]\ncategory = 1\n'
    err = refuse(tmp_path, text)
    assert len(err.problems) == 1
    message = str(err)
    assert '"0.9"' in message
    assert '"0.1"' in message and '"0.2"' in message


def test_missing_version_is_refused_not_assumed(tmp_path: Path) -> None:
    err = refuse(tmp_path, 'target = "demo"\n' + case("cases", "c1"))
    assert len(err.problems) == 1
    message = str(err)
    assert message.startswith("evals.toml: commonsformat_evals is missing")
    assert 'commonsformat_evals = "0.2"' in message


def test_non_string_version_is_a_problem(tmp_path: Path) -> None:
    err = refuse(tmp_path, "commonsformat_evals = 0.2\n" + case("cases", "c1"))
    assert err.problems == ("commonsformat_evals must be a string such as '0.2', not a float",)


def test_unknown_top_level_array_of_tables_is_refused_with_its_line(tmp_path: Path) -> None:
    text = HEAD + case("cases", "c1") + case("case", "typo") + case("case", "typo2")
    err = refuse(tmp_path, text)
    assert len(err.problems) == 1
    line = line_of(text, "[[case]]")
    assert str(err).startswith(f"evals.toml:{line}:1: unknown array of tables [[case]] (2 entries)")
    assert "did you mean [[cases]]?" in str(err)


def test_misspelt_adversarial_array_is_refused(tmp_path: Path) -> None:
    text = HEAD + case("cases", "c1") + '[[ "adversarials" ]]\nname = "a"\ncategory = "x"\n'
    (problem,) = refuse(tmp_path, text).problems
    header = '[[ "adversarials" ]]'
    assert problem.startswith(f"{line_of(text, header)}:1: ")
    assert "did you mean [[adversarial]]?" in problem


def test_a_suite_without_cases_loads_with_a_warning(tmp_path: Path) -> None:
    suite = load(tmp_path, HEAD)
    assert suite.cases == ()
    assert suite.warnings == ("the suite declares no cases",)


def test_unknown_top_level_keys_are_refused_with_line_and_suggestion(tmp_path: Path) -> None:
    text = HEAD + "targets = 1\n[meta]\nx = 1\n" + case("cases", "c1")
    problems = refuse(tmp_path, text).problems
    assert len(problems) == 2
    assert problems[0].startswith("3:1: unknown top-level key 'targets' (did you mean 'target'?);")
    assert problems[1].startswith("4:1: unknown top-level key 'meta'")


def test_unknown_case_fields_are_refused_with_line_and_suggestion(tmp_path: Path) -> None:
    text = HEAD + case("cases", "c1", extra="expects = { output = 1 }\nweight = 3")
    problems = refuse(tmp_path, text).problems
    line = line_of(text, "[[cases]]")
    assert problems == (
        f"[[cases]] #1 \"c1\" (line {line}): unknown field 'expects' (did you mean "
        "'expect'?); a case holds only category, description, expect, input, name, "
        "severity, tags, verifies",
        f"[[cases]] #1 \"c1\" (line {line}): unknown field 'weight'; a case holds only "
        "category, description, expect, input, name, severity, tags, verifies",
    )


def test_every_documented_field_and_top_level_key_is_accepted(tmp_path: Path) -> None:
    text = (
        HEAD
        + 'target_version = "^0.1.0"\n'
        + "[properties]\nanything = 1\n"
        + '[adversarial_coverage]\ncategories = ["input-validation"]\n'
        + case(
            "adversarial",
            "a",
            "input-validation",
            extra='description = "d"\nverifies = ["x"]\ntags = ["t"]\nseverity = "error"\n'
            "input = { a = 1 }\nexpect = { rejects = true }",
        )
    )
    assert load(tmp_path, text).warnings == ()


# --- reading files --------------------------------------------------------------------


def test_unreadable_files_are_suite_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "evals.toml"
    with pytest.raises(SuiteError) as info:
        load_suite(missing)
    assert info.value.path == missing
    assert str(info.value).startswith("evals.toml: cannot read ")
    assert "No such file" in str(info.value)
    assert info.value.__suppress_context__
    with pytest.raises(SuiteError, match="cannot read"):
        load_suite(str(tmp_path))


def test_bytes_must_be_utf8(tmp_path: Path) -> None:
    path = tmp_path / "evals.toml"
    path.write_bytes(HEAD.encode() + b'x = "\xff"\n')
    with pytest.raises(SuiteError, match="UTF-8"):
        load_suite(path)


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "evals.toml"
    data = "\ufeff".encode() + (HEAD + case("cases", "c1")).encode()
    path.write_bytes(data)
    suite = load_suite(path)
    assert suite.cases[0].line == 3
    assert suite.content_hash == hashlib.sha256(data).hexdigest()


def test_content_hash_is_stable_and_tracks_every_byte(tmp_path: Path) -> None:
    text = HEAD + case("cases", "c1")
    first = load(tmp_path, text).content_hash
    assert first == hashlib.sha256(text.encode()).hexdigest()
    assert load(tmp_path, text).content_hash == first
    assert parse_suite(text, tmp_path / "evals.toml").content_hash == first
    assert parse_suite(text.encode(), tmp_path / "evals.toml").content_hash == first
    assert load(tmp_path, text + " ").content_hash != first
    assert load(tmp_path, text.replace("c1", "c2")).content_hash != first


def test_parse_suite_from_text_matches_load_suite(tmp_path: Path) -> None:
    text = HEAD + case("adversarial", "a") + case("cases", "c")
    path = write(tmp_path, text)
    assert parse_suite(text, path) == load_suite(path)


# --- fixtures -------------------------------------------------------------------------


def test_fixture_references_resolve_anywhere(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    (fixtures / "sub").mkdir(parents=True)
    (fixtures / "doc.md").write_text("# hi\n")
    (fixtures / "sub" / "table.csv").write_text("a,b\n")
    value: dict[str, Any] = {
        "path": "fixture://doc.md",
        "rows": [{"file": "fixture://sub/table.csv"}, ["fixture://doc.md", 3]],
        "text": "see fixture://doc.md",
        "n": 1,
        "flag": True,
    }
    resolved, missing = resolve_fixtures(value, fixtures)
    assert missing == ()
    assert resolved == {
        "path": str(fixtures / "doc.md"),
        "rows": [{"file": str(fixtures / "sub" / "table.csv")}, [str(fixtures / "doc.md"), 3]],
        "text": "see fixture://doc.md",
        "n": 1,
        "flag": True,
    }
    assert value["path"] == "fixture://doc.md"
    assert value["rows"][0] == {"file": "fixture://sub/table.csv"}
    assert resolved["rows"] is not value["rows"]


def test_fixture_paths_are_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "a.md").write_text("a")
    monkeypatch.chdir(tmp_path)
    resolved, missing = resolve_fixtures(["fixture://a.md"], Path("fixtures"))
    assert missing == ()
    assert os.path.isabs(resolved[0])
    assert resolved[0] == str(tmp_path / "fixtures" / "a.md")


def test_missing_and_escaping_fixtures_are_listed(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    (fixtures / "folder").mkdir()
    value: dict[str, Any] = {
        "a": "fixture://gone.md",
        "b": ["fixture://../secret.txt", {"c": "fixture:///etc/passwd"}],
        "d": "fixture://gone.md",
        "e": "fixture://folder",
        "f": "fixture://",
    }
    resolved, missing = resolve_fixtures(value, fixtures)
    assert missing == ("gone.md", "../secret.txt", "/etc/passwd", "folder", "")
    assert resolved["a"] == str(fixtures / "gone.md")
    assert resolved["b"][0] == "fixture://../secret.txt"
    assert resolved["b"][1] == {"c": "fixture:///etc/passwd"}


def test_loading_does_not_check_fixtures(tmp_path: Path) -> None:
    extra = 'input = { path = "fixture://absent.md" }'
    suite = load(tmp_path, HEAD + case("cases", "c1", extra=extra))
    assert suite.case("c1").input == {"path": "fixture://absent.md"}
    assert suite.fixtures_dir == tmp_path / "fixtures"
    _, missing = resolve_fixtures(suite.case("c1").input, suite.fixtures_dir)
    assert missing == ("absent.md",)


# --- scale ----------------------------------------------------------------------------


@pytest.mark.parametrize("fake_headers", [False, True])
def test_many_cases_keep_order_and_lines(tmp_path: Path, fake_headers: bool) -> None:
    blocks = []
    for number in range(3000):
        array = ("cases", "adversarial", "generator_adversary")[number % 7 % 3]
        body = '"""\n[[cases]]\n"""' if fake_headers else '"""\nplain\n"""'
        blocks.append(case(array, f"n{number:04d}", extra=f"input = {{ md = {body} }}"))
    text = HEAD + "".join(blocks)
    suite = load(tmp_path, text)
    assert len(suite.cases) == 3000
    assert [c.position for c in suite.cases] == list(range(1, 3001))
    lines = text.splitlines()
    for got in suite.cases:
        assert got.line is not None
        assert lines[got.line - 1] == f"[[{got.label.split(']]')[0][2:]}]]"
        assert lines[got.line] == f'name = "{got.name}"'


def test_garbage_collector_state_is_restored(tmp_path: Path) -> None:
    assert gc.isenabled()
    load(tmp_path, HEAD + case("cases", "c1"))
    assert gc.isenabled()
    with pytest.raises(SuiteError):
        load(tmp_path, HEAD + "[[cases]]\n")
    assert gc.isenabled()
    gc.disable()
    try:
        load(tmp_path, HEAD + case("cases", "c1"))
        assert not gc.isenabled()
    finally:
        gc.enable()


# --- the fast load and the careful one --------------------------------------------------


def careful(text: str, path: Path) -> Any:
    """The suite the careful path (the whole document parsed at once) builds."""
    document = tomllib.loads(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return suite_module._build_suite(document, text, path, digest)


def fast_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the careful path fail the test: only the fast load may answer."""

    def refuse_careful(*args: object) -> None:
        raise AssertionError("the careful path was taken")

    monkeypatch.setattr(suite_module, "_build_suite", refuse_careful)


LAYOUTS = {
    "plain": HEAD + "".join(case("cases", f"c{n}", extra="input = { a = 1 }") for n in range(7)),
    "interleaved": HEAD
    + "".join(
        case(("cases", "adversarial", "generator_adversary")[n % 3], f"c{n}") for n in range(9)
    ),
    "subtables": HEAD
    + "".join(
        f'[[cases]]\nname = "c{n}"\ncategory = "x"\n'
        f'[cases.input]\nq = {n}\n[cases.expect]\nr = "{n}"\n'
        for n in range(5)
    ),
    "spaced and quoted headers": HEAD
    + '[[ "cases" ]]\nname = "a"\ncategory = "x"\n'
    + '  [[\'adversarial\']] # note\nname = "b"\ncategory = "x"\n'
    + '[[cases]]\r\nname = "c"\r\ncategory = "x"\r\n',
    "properties after the cases": HEAD
    + case("cases", "a")
    + case("cases", "b")
    + '[properties]\nP1 = "text"\n[properties.more]\nx = 1\n'
    + case("cases", "c")
    + '[adversarial_coverage]\ncategories = ["x"]\n',
    "every field": HEAD
    + case(
        "cases",
        "full",
        extra='description = "d"\nverifies = ["P1"]\ntags = ["t", "u"]\nseverity = "high"\n'
        'input = { when = 1979-05-27, list = [1, 2.5, "s", true] }\nexpect = { out = [] }',
    )
    + case("cases", "bare"),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_fast_load_equals_the_careful_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    text = LAYOUTS[layout]
    expected = careful(text, tmp_path / "evals.toml")
    monkeypatch.setattr(suite_module, "_GROUP", 2)  # several groups, split anywhere
    fast_only(monkeypatch)
    got = parse_suite(text, tmp_path / "evals.toml")
    assert got == expected
    assert [c.line for c in got.cases] == [c.line for c in expected.cases]
    assert [c.array_index for c in got.cases] == [c.array_index for c in expected.cases]
    assert got.properties == expected.properties
    assert got.adversarial_coverage == expected.adversarial_coverage


TRICKY = {
    "a header inside a multi-line string": HEAD
    + case("cases", "a", extra='input = { md = """\n[[cases]]\nname = "fake"\n""" }')
    + case("cases", "b"),
    "a header inside a literal string": HEAD
    + case("cases", "a", extra="input = { md = '''\n[[adversarial]]\n''' }")
    + case("cases", "b"),
    "a header inside a multi-line array": HEAD
    + case("cases", "a", extra='input = { x = [\n[["cases"]],\n] }')
    + case("cases", "b"),
    "a subtable of an earlier array's case": HEAD
    + case("cases", "a")
    + case("adversarial", "b")
    + "[cases.input]\nq = 1\n",
    "an inline array before the headers": 'commonsformat_evals = "0.2"\n'
    + 'cases = [{ name = "i", category = "x" }]\n'
    + case("adversarial", "b"),
    "a table split across groups": HEAD
    + case("cases", "a")
    + "[properties]\nx = 1\n"
    + case("cases", "b")
    + case("cases", "c")
    + "[properties.more]\ny = 2\n",
}


@pytest.mark.parametrize("layout", sorted(TRICKY))
def test_layouts_the_fast_load_cannot_prove_take_the_careful_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    text = TRICKY[layout]
    try:
        expected: Any = careful(text, tmp_path / "evals.toml")
    except (SuiteError, tomllib.TOMLDecodeError) as exc:
        expected = type(exc)
    monkeypatch.setattr(suite_module, "_GROUP", 1)
    assert suite_module._load_common_shape(text, tmp_path / "evals.toml", "x") is None
    try:
        got: Any = parse_suite(text, tmp_path / "evals.toml")
    except SuiteError as exc:
        got = type(exc)
    if expected is tomllib.TOMLDecodeError:
        expected = SuiteError
    assert got == expected


@pytest.mark.parametrize(
    "spoil",
    [
        ('name = "c3"', 'name = "c1"'),
        ('name = "c3"', 'name = "  "'),
        ('category = "functional"', "category = 3"),
        ("input = { a = 1 }", "input = 1"),
        ("input = { a = 1 }", "expect = [1]"),
        ("input = { a = 1 }", "tags = [1]"),
        ("input = { a = 1 }", "verifies = 'P1'"),
        ("input = { a = 1 }", "severity = 2"),
        ("input = { a = 1 }", "description = []"),
        ("input = { a = 1 }", "inputs = { a = 1 }"),
        ('target = "demo"', "target = 1"),
        ('target = "demo"', 'target = "demo"\nextra = 1'),
    ],
)
def test_every_problem_is_reported_by_the_careful_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spoil: tuple[str, str]
) -> None:
    """The fast load never raises: it steps aside, and the careful path names the file,
    line and case of each problem exactly as it always did."""
    text = LAYOUTS["plain"].replace(*spoil, 1)
    monkeypatch.setattr(suite_module, "_GROUP", 2)
    assert suite_module._load_common_shape(text, tmp_path / "evals.toml", "x") is None
    with pytest.raises(SuiteError) as info:
        parse_suite(text, tmp_path / "evals.toml")
    with pytest.raises(SuiteError) as again:
        careful(text, tmp_path / "evals.toml")
    assert info.value.problems == again.value.problems


def test_a_loaded_case_keeps_its_tables_packed_and_hands_out_copies(tmp_path: Path) -> None:
    suite = load(tmp_path, LAYOUTS["plain"])
    first = suite.cases[0]
    stored = Case.__slots__
    assert "input" in stored
    given = first.input
    assert given == {"a": 1}
    given["a"] = 2
    assert first.input == {"a": 1}
    assert first.input is not first.input
    assert first.expect == {}


def test_a_case_refuses_bytes_for_a_table() -> None:
    with pytest.raises(TypeError, match="must be a table"):
        Case("n", "functional", "c", 1, 1, b"{", {})  # type: ignore[arg-type]


def test_repeated_values_are_shared_between_cases(tmp_path: Path) -> None:
    text = HEAD + "".join(
        case("cases", f"c{n}", extra='tags = ["t"]\nseverity = "high"') for n in range(4)
    )
    suite = load(tmp_path, text)
    first, *others = suite.cases
    for other in others:
        assert other.category is first.category
        assert other.tags is first.tags
        assert other.severity is first.severity


def test_an_unclosed_inline_table_names_the_line_it_opened_on(tmp_path: Path) -> None:
    """An inline table may span lines, so the parser gives up far below the missing
    brace, at the next case's header; the message says where the table opened."""
    text = HEAD + '[[cases]]\nname = "a"\ncategory = "functional"\ninput = { x = "}{" }\n'
    text += 'expect = { v = { no-store = true }  # a } in a comment\n\n[[cases]]\nname = "b"\n'
    (problem,) = refuse(tmp_path, text).problems
    assert problem == (
        "9:1: invalid TOML: Unclosed inline table; the table opened at line 7 is not closed "
        "(it ends with })"
    )
