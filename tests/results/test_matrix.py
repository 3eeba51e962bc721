"""Several implementations at once: the matrix, the agreement view, and `cer run` around them.

The calc example's good and bad implementations plus a command harness give an exact,
known matrix. Constructed runs pin down what counts as a disagreement: observations are
compared with each other strictly and whatever the suite expects. One implementation
keeps the single-run output and JSON shape.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cer.cli.exits import ExitCode, exit_code_for_runs
from cer.cli.main import main
from cer.cli.run import labelled_path
from cer.config import (
    ProjectConfig,
    ResolvedRun,
    UsageError,
    add_run_arguments,
    resolve,
    resolve_run,
)
from cer.engine.options import RunOptions
from cer.engine.python.distribution import distribution_of
from cer.history.database import History
from cer.model import CaseResult, ImplementationOrigin, RunResult, Status, Suite
from cer.reports import text as text_report
from cer.results.labels import implementation_labels, split_label
from cer.results.matrix import (
    Agreement,
    Known,
    Standing,
    build_matrix,
    labels_for_runs,
    matrix_to_dict,
    parse_agree_on,
    short_label,
    unique_labels,
)
from cer.suite.loader import load_suite
from support import EXAMPLES, ROOT, Module

CALC = EXAMPLES / "calc" / "evals.toml"
PYTHON = shlex.quote(sys.executable)
HARNESS = f"{PYTHON} examples/harnesses/calc_harness.py"
LABELS = ["calc_ref", "calc_sloppy", "calc_strict_errors", "calc_harness"]
CALC_ARGS = [
    "--impl",
    "calc_ref:evaluate",
    "--impl",
    "calc_sloppy:evaluate",
    "--impl",
    "calc_strict_errors:evaluate",
    "--impl-cmd",
    HARNESS,
]

SLOPPY_FAILS = frozenset(
    {
        "division-chain-left-to-right",
        "mixed-precedence-chain",
        "exact-division-is-still-float",
        "exact-division-chain-is-float",
        "large-exact-division-is-float",
        "power-is-right-associative",
        "unary-minus-looser-than-power",
        "rejects-power-tower",
    }
)
STRICT_ERRORS_FAILS = frozenset(
    {
        "rejects-division-by-zero",
        "rejects-division-by-computed-zero",
        "rejects-modulo-by-zero",
        "tabs-between-tokens",
        "tabs-and-spaces-around-expression",
        "rejects-blank-expression",
    }
)
# Every implementation passes these, but calc_strict_errors raises ValueError where the
# others raise ZeroDivisionError: the same verdict in different words, which the cases
# (error_includes only) do not ask about. Compared on whole observations they disagree.
PASSING_YET_DIFFERENT = frozenset(
    {"rejects-float-division-by-zero", "rejects-floor-division-by-zero"}
)
DISAGREEMENTS = SLOPPY_FAILS | STRICT_ERRORS_FAILS
P, F, E, S = Status.PASS, Status.FAIL, Status.ERRORED, Status.SKIPPED


def run_cli(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cer.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def expected_status(label: str, case: str) -> str:
    failing = {"calc_sloppy": SLOPPY_FAILS, "calc_strict_errors": STRICT_ERRORS_FAILS}
    return "fail" if case in failing.get(label, ()) else "pass"


# ------------------------------------------------------------------ the calc example


@pytest.fixture(scope="module")
def calc_json(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any]]:
    history = tmp_path_factory.mktemp("json") / "history.sqlite"
    done = run_cli(
        ["run", str(CALC), *CALC_ARGS, "--format", "json", "-q", "--history", str(history)]
    )
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def calc_text(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    where = tmp_path_factory.mktemp("text")
    done = run_cli(
        [
            "run",
            str(CALC),
            *CALC_ARGS,
            "-q",
            "--history",
            str(where / "h.sqlite"),
            "--report",
            f"json={where / 'results.json'}",
            "--report",
            f"junit={where / 'junit.xml'}",
        ]
    )
    assert done.stderr == "", done.stderr
    return done.returncode, done.stdout, where


@pytest.mark.slow
def test_calc_matrix_has_exactly_the_known_cells(calc_json: tuple[int, dict[str, Any]]) -> None:
    code, document = calc_json
    assert code == ExitCode.FAILED
    assert document["format"] == "cer-matrix"
    assert [i["label"] for i in document["implementations"]] == LABELS
    names = [case.name for case in load_suite(CALC).cases]
    assert [c["case_name"] for c in document["cases"]] == names
    for row in document["cases"]:
        assert row["statuses"] == {
            label: expected_status(label, row["case_name"]) for label in LABELS
        }, row["case_name"]
        agreement = "disagree" if row["case_name"] in DISAGREEMENTS else "agree"
        assert row["agreement"] == agreement, row["case_name"]
        assert row["words_differ"] == (row["case_name"] in PASSING_YET_DIFFERENT)
    verdicts = [i["summary"]["verdict"] for i in document["implementations"]]
    assert verdicts == ["conformant", "nonconformant", "nonconformant", "conformant"]
    assert [i["summary"]["cases_failed"] for i in document["implementations"]] == [0, 8, 6, 0]
    assert document["implementations"][3]["implementation_id"].startswith("cmd:")
    assert [i["origin"] for i in document["implementations"]] == [
        None,
        None,
        None,
        {"name": "calc-python", "version": "0.1.0", "source": "harness"},
    ]
    assert document["summary"] == {
        "implementations": 4,
        "cases_total": 70,
        "cases_compared": 70,
        "disagreements": 14,
        "same_verdict_different_words": 2,
        "all_errored": 0,
        "agree_on": "expected",
    }


@pytest.mark.slow
def test_calc_disagreements_name_who_observed_what(calc_json: tuple[int, dict[str, Any]]) -> None:
    _, document = calc_json
    found = {d["case_name"]: d for d in document["disagreements"]}
    assert set(found) == DISAGREEMENTS
    power = found["power-is-right-associative"]
    assert power["differing_keys"] == ["value"]
    assert [(g["labels"], g["status"], g["observation"]["value"]) for g in power["groups"]] == [
        (["calc_ref", "calc_strict_errors", "calc_harness"], "pass", 512),
        (["calc_sloppy"], "fail", 64),
    ]
    assert "elapsed_ms" not in power["groups"][0]["observation"]
    division = found["division-chain-left-to-right"]
    values = [g["observation"]["value"] for g in division["groups"]]
    assert values == [2.0, 2] and [type(v) for v in values] == [float, int]
    assert document["all_errored"] == []


@pytest.mark.slow
def test_calc_json_carries_every_run_in_the_single_run_shape(
    calc_json: tuple[int, dict[str, Any]], module: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    _, document = calc_json
    module.suite(CASES)
    impl = module.impl(GOOD)
    main(
        [
            "run",
            str(module.root / "evals.toml"),
            "--impl",
            f"{impl}:f",
            "--format",
            "json",
            "--no-history",
        ]
    )
    single = json.loads(capsys.readouterr().out)
    assert len(document["runs"]) == 4
    for info, run in zip(document["implementations"], document["runs"], strict=True):
        assert set(run) == set(single)
        assert run["format"] == "cer-results"
        assert run["run"]["run_id"] == info["run_id"]
        assert run["run"]["implementation_id"] == info["implementation_id"]
        assert run["summary"] == info["summary"]
        assert [r["status"] for r in run["results"]] == [
            expected_status(info["label"], r["case_name"]) for r in run["results"]
        ]
    assert set(document) == {
        "format",
        "format_version",
        "suite",
        "implementations",
        "ranking",
        "runs",
        "cases",
        "disagreements",
        "all_errored",
        "summary",
    }


def _table_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("case "))
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


@pytest.mark.slow
def test_calc_text_matrix_lists_failures_and_disagreements_first(
    calc_text: tuple[int, str, Path],
) -> None:
    code, text, _ = calc_text
    assert code == ExitCode.FAILED
    rows = _table_rows(text)
    assert rows[0] == ["case", *LABELS, "agreement"]
    names = [case.name for case in load_suite(CALC).cases]
    shown = [name for name in names if name in DISAGREEMENTS]
    word = {"pass": "✔ PASS", "fail": "✘ FAIL"}
    expected = [
        [name, *(word[expected_status(label, name)] for label in LABELS), "≠ differ"]
        for name in shown
    ]
    assert rows[1 : 1 + len(shown)] == expected
    assert rows[1 + len(shown)] == [
        "… 56 more cases passed by every implementation, with no disagreement (-v lists them)"
    ]
    assert rows[-4:] == [
        ["passed", "70", "62", "64", "70"],
        ["failed", "0", "8", "6", "0"],
        ["errored", "0", "0", "0", "0"],
        ["skipped", "0", "0", "0", "0"],
    ]
    assert re.search(
        r"^  calc_harness +cmd:\S+ examples/harnesses/calc_harness\.py@[0-9a-f]{10}"
        r" \(calc-python 0\.1\.0, as the harness declared itself\) — conformant",
        text,
        re.MULTILINE,
    )
    assert (
        "agreement: 14 of 70 cases compared were observed differently, on the expected keys "
        "and the verdict" in text
    )
    assert (
        "same verdict, different words: 2 cases (--agree-on all compares them): "
        "rejects-float-division-by-zero, rejects-floor-division-by-zero" in text
    )
    assert (
        "      calc_ref, calc_sloppy, calc_harness  ✔ PASS   error_type: str "
        "'ZeroDivisionError'" in text  # rejects-division-by-zero asks for the type
    )
    assert "      calc_sloppy  ✘ FAIL   value: int 64" in text
    assert text.splitlines()[-1] == (
        "4 implementations × 70 cases: 2 conformant, 2 nonconformant · 14 disagreements, "
        "2 worded differently"
    )


@pytest.mark.slow
def test_calc_runs_are_recorded_and_reported_one_by_one(calc_text: tuple[int, str, Path]) -> None:
    _, _, where = calc_text
    with History.open(where / "h.sqlite", create=False) as history:
        records = history.runs(None)
    assert sorted(r.implementation for r in records) == sorted(
        ["calc_ref:evaluate", "calc_sloppy:evaluate", "calc_strict_errors:evaluate", HARNESS]
    )
    assert len({r.run_id for r in records}) == 4
    for label in LABELS:
        report = json.loads((where / f"results.{label}.json").read_text())
        assert report["format"] == "cer-results"
        assert report["summary"]["cases_failed"] == {"calc_sloppy": 8, "calc_strict_errors": 6}.get(
            label, 0
        )
        assert (where / f"junit.{label}.xml").read_text().startswith("<?xml")
    assert not (where / "results.json").exists()


# ------------------------------------------------------------------ constructed runs


def make_suite(tmp_path: Path, cases: list[tuple[str, str]]) -> Suite:
    """A suite of functional cases: (name, expect inline table)."""
    text = 'commonsformat_evals = "0.2"\ntarget = "t"\n'
    for name, expect in cases:
        text += f'\n[[cases]]\nname = "{name}"\ncategory = "functional"\ninput = {{}}\n'
        text += f"expect = {expect}\n"
    path = tmp_path / "evals.toml"
    path.write_text(text)
    return load_suite(path)


def obs(value: Any = None, *, elapsed: float = 1.0, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "output": value,
        "error": None,
        "error_type": None,
        "rejects": False,
        "crashed": False,
        "hung": False,
        "elapsed_ms": elapsed,
    }
    base.update(extra)
    return base


def result(
    name: str, status: Status, observation: dict[str, Any] | None = None, reason: str | None = None
) -> CaseResult:
    return CaseResult(
        name, "functional", "functional", status, reason=reason, observation=observation
    )


def make_run(impl: str, results: list[CaseResult], suite: Suite) -> RunResult:
    by_name = {r.case_name: r for r in results}
    ordered = tuple(
        CaseResult(
            r.case_name,
            r.case_class,
            r.category,
            r.status,
            reason=r.reason,
            observation=r.observation,
            position=case.position,
        )
        for case in suite.cases
        if (r := by_name.get(case.name)) is not None
    )
    return RunResult(f"run-{impl}", "t", f"{impl}@0000000000", 0, 1, ordered, implementation=impl)


@pytest.fixture
def constructed(tmp_path: Path) -> Iterator[Suite]:
    yield make_suite(
        tmp_path,
        [
            ("same", "{ output = 1 }"),
            ("wrong-expectation", "{ output = 99 }"),
            ("two-pass-one-fails", "{ output = 1 }"),
            ("all-errored", "{ output = 1 }"),
            ("wrong-and-divided", "{ output = 99 }"),
            ("int-or-float", "{ output = 1 }"),
            ("slow-one", "{ output = 1, elapsed_ms_max = 5 }"),
        ],
    )


def three_runs(suite: Suite) -> list[RunResult]:
    a = [
        result("same", P, obs(1, elapsed=1.0)),
        result("wrong-expectation", F, obs(1)),
        result("two-pass-one-fails", P, obs(1)),
        result("all-errored", E, reason="boom"),
        result("wrong-and-divided", F, obs(1)),
        result("int-or-float", P, obs(1)),
        result("slow-one", P, obs(1, elapsed=1.0)),
    ]
    b = [
        result("same", P, obs(1, elapsed=7.0)),
        result("wrong-expectation", F, obs(1)),
        result("two-pass-one-fails", P, obs(1)),
        result("all-errored", E, reason="timeout"),
        result("wrong-and-divided", F, obs(2)),
        result("int-or-float", F, obs(1.0)),
        result("slow-one", F, obs(1, elapsed=9.0)),
    ]
    c = [
        result("same", P, obs(1, elapsed=3.0)),
        result("wrong-expectation", F, obs(1)),
        result("two-pass-one-fails", F, obs(2)),
        result("all-errored", E, reason="boom"),
        result("wrong-and-divided", F, obs(3)),
        result("int-or-float", P, obs(1)),
        result("slow-one", P, obs(1, elapsed=2.0)),
    ]
    return [make_run("a:f", a, suite), make_run("b:f", b, suite), make_run("c:f", c, suite)]


def test_agreement_compares_observations_not_verdicts(constructed: Suite) -> None:
    matrix = build_matrix(constructed, three_runs(constructed), ["a", "b", "c"])
    agreement = {row.case_name: row.agreement for row in matrix.rows}
    assert agreement == {
        "same": Agreement.AGREE,  # elapsed_ms differs, which is never compared
        "wrong-expectation": Agreement.AGREE,  # all fail the same way
        "two-pass-one-fails": Agreement.DISAGREE,
        "all-errored": Agreement.ALL_ERRORED,
        "wrong-and-divided": Agreement.DISAGREE,  # all fail, each differently
        "int-or-float": Agreement.DISAGREE,  # 1 is not 1.0
        "slow-one": Agreement.DISAGREE,  # same observation, a time bound missed
    }
    assert [row.case_name for row in matrix.disagreements] == [
        "two-pass-one-fails",
        "wrong-and-divided",
        "int-or-float",
        "slow-one",
    ]
    assert [row.case_name for row in matrix.all_errored] == ["all-errored"]
    row = matrix.row("two-pass-one-fails")
    assert [
        (g.labels, g.status, g.observation and g.observation["output"]) for g in row.groups
    ] == [(("a", "b"), P, 1), (("c",), F, 2)]
    assert row.differing_keys == ("output",)
    divided = matrix.row("wrong-and-divided")
    assert [g.labels for g in divided.groups] == [("a",), ("b",), ("c",)]
    assert matrix.row("slow-one").differing_keys == ()
    assert [g.reasons for g in matrix.row("all-errored").groups] == [("boom", "timeout", "boom")]
    assert matrix.totals["b"].failed == 4
    cell = matrix.cell("int-or-float", "b")
    assert cell is not None and cell.observation is not None
    assert type(cell.observation["output"]) is float


def test_rows_put_failures_and_disagreements_first(constructed: Suite) -> None:
    runs = three_runs(constructed)
    matrix = build_matrix(constructed, runs, ["a", "b", "c"])
    assert [row.case_name for row in matrix.rows] == [
        "wrong-expectation",
        "two-pass-one-fails",
        "all-errored",
        "wrong-and-divided",
        "int-or-float",
        "slow-one",
        "same",
    ]
    assert [row.case_name for row in matrix.declared] == [case.name for case in constructed.cases]


def test_empty_or_wrong_expectations_still_show_divergence(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, [("no-expectation", "{}"), ("wrong", "{ output = 0 }")])
    runs = [
        make_run(
            "a:f",
            [result("no-expectation", E, obs("x"), "could not verify"), result("wrong", F, obs(1))],
            suite,
        ),
        make_run(
            "b:f",
            [result("no-expectation", E, obs("y"), "could not verify"), result("wrong", F, obs(2))],
            suite,
        ),
    ]
    matrix = build_matrix(suite, runs)
    empty = matrix.row("no-expectation")
    assert empty.agreement is Agreement.DISAGREE and empty.expect_empty
    assert matrix.row("wrong").agreement is Agreement.DISAGREE
    text = text_report.render_matrix(matrix, suite)
    assert (
        "≠ no-expectation  (functional)  evals.toml:4 [[cases]]  2 errored  "
        "(the suite expects nothing here)" in text
    )
    assert (
        "≠ wrong  (functional)  evals.toml:10 [[cases]]  2 fail  (no implementation passes)" in text
    )
    assert "      a  ‼ ERROR  output: str 'x'" in text
    assert "      b  ✘ FAIL   output: int 2" in text


def test_skipped_cells_are_not_compared(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, [("one", "{ output = 1 }")])
    runs = [
        make_run("a:f", [result("one", P, obs(1))], suite),
        make_run("b:f", [result("one", S, reason="category not supported")], suite),
    ]
    row = build_matrix(suite, runs).row("one")
    assert row.agreement is Agreement.NOT_COMPARED
    assert row.rank == 1


def test_an_implementation_that_observed_nothing_is_left_out(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, [("one", "{ output = 1 }"), ("two", "{ output = 2 }")])
    loaded = "the implementation b:f could not be loaded: ImportError"
    runs = [
        make_run("a:f", [result("one", P, obs(1)), result("two", P, obs(2))], suite),
        make_run("b:f", [result("one", E, reason=loaded), result("two", E, reason=loaded)], suite),
        make_run("c:f", [result("one", P, obs(1)), result("two", F, obs(3))], suite),
    ]
    matrix = build_matrix(suite, runs)
    assert matrix.unobserved == ("b",)
    assert matrix.row("one").agreement is Agreement.AGREE
    assert matrix.row("one").failing  # its cell still shows the error
    assert [g.labels for g in matrix.row("two").groups] == [("a",), ("c",)]
    text = text_report.render_matrix(matrix, suite)
    assert (
        "b observed nothing (every case it ran errored); it is left out of the comparison" in text
    )


def test_a_case_one_implementation_errored_on_is_a_disagreement(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, [("one", "{ output = 1 }"), ("two", "{ output = 2 }")])
    runs = [
        make_run("a:f", [result("one", P, obs(1)), result("two", P, obs(2))], suite),
        make_run(
            "b:f", [result("one", P, obs(1)), result("two", E, reason="raised TypeError")], suite
        ),
    ]
    row = build_matrix(suite, runs).row("two")
    assert row.agreement is Agreement.DISAGREE
    assert [(g.labels, g.observation is None) for g in row.groups] == [
        (("a",), False),
        (("b",), True),
    ]
    text = text_report.render_matrix(build_matrix(suite, runs), suite)
    assert "      b  ‼ ERROR  nothing observed: raised TypeError" in text


def test_matrix_needs_matching_labels(constructed: Suite) -> None:
    runs = three_runs(constructed)
    with pytest.raises(ValueError, match="3 runs"):
        build_matrix(constructed, runs, ["a", "b"])
    with pytest.raises(ValueError, match="unique"):
        build_matrix(constructed, runs, ["a", "a", "b"])
    with pytest.raises(ValueError, match="at least one"):
        build_matrix(constructed, [])


def test_json_document_of_constructed_runs(constructed: Suite) -> None:
    matrix = build_matrix(constructed, three_runs(constructed), ["a", "b", "c"])
    document = matrix_to_dict(matrix, constructed)
    json.dumps(document, allow_nan=False)
    assert [d["case_name"] for d in document["disagreements"]] == [
        "two-pass-one-fails",
        "wrong-and-divided",
        "int-or-float",
        "slow-one",
    ]
    assert document["all_errored"] == [
        {
            "case_name": "all-errored",
            "position": 4,
            "case_class": "functional",
            "category": "functional",
            "reasons": {"a": "boom", "b": "timeout", "c": "boom"},
        }
    ]
    floats = document["disagreements"][2]["groups"]
    assert [(g["labels"], g["observation"]["output"]) for g in floats] == [
        (["a", "c"], 1),
        (["b"], 1.0),
    ]
    assert document["cases"][0]["statuses"] == {"a": "pass", "b": "pass", "c": "pass"}


def test_text_drops_words_when_the_matrix_is_too_wide(constructed: Suite) -> None:
    matrix = build_matrix(constructed, three_runs(constructed), ["a", "b", "c"])
    wide = _table_rows(text_report.render_matrix(matrix, constructed))
    narrow = _table_rows(text_report.render_matrix(matrix, constructed, width=30))
    assert wide[2] == ["two-pass-one-fails", "✔ PASS", "✔ PASS", "✘ FAIL", "≠ differ"]
    assert narrow[2] == ["two-pass-one-fails", "✔", "✔", "✘", "≠"]
    assert narrow[3] == ["all-errored", "‼", "‼", "‼", "‼"]


# ------------------------------------------------------------------ labels


@pytest.mark.parametrize(
    ("kind", "impl", "label"),
    [
        ("python", "calc_ref:evaluate", "calc_ref"),
        ("python", "mypkg.render:Renderer.run", "render"),
        ("command", "python3 examples/harnesses/calc_harness.py", "calc_harness"),
        ("command", "/usr/bin/node --stack-size=9000 impl.mjs --fast", "impl"),
        ("command", "python3 -m mypkg.harness", "harness"),
        ("command-per-case", "./build/my-impl --serve", "my-impl"),
        ("command", "'weird name!' arg", "weird_name"),
    ],
)
def test_short_labels(kind: str, impl: str, label: str) -> None:
    assert short_label(kind, impl) == label


def test_labels_are_made_unique_around_explicit_ones() -> None:
    assert unique_labels(["a", "a", "b", "a"]) == ("a", "a-2", "b", "a-3")
    assert unique_labels(["a", "x", "a"], [None, "a", None]) == ("a-2", "a", "a-3")


def test_labels_for_runs_tell_commands_from_python(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, [("one", "{ output = 1 }")])
    run = make_run("calc_ref:evaluate", [], suite)
    command = RunResult(
        "r2", "t", "cmd:python3 h.py@0000000000", 0, 1, (), implementation="python3 h.py"
    )
    assert labels_for_runs([run, command, run]) == ("calc_ref", "h", "calc_ref-2")


def test_labelled_report_paths() -> None:
    assert labelled_path("cer-junit.xml", "calc_ref") == "cer-junit.calc_ref.xml"
    assert labelled_path("out/report", "b") == str(Path("out/report.b"))


# ------------------------------------------------------------------ options


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return parser.parse_args(argv)


def test_mixed_options_keep_their_order(tmp_path: Path) -> None:
    args = parse(
        [
            "s.toml",
            "--impl-cmd",
            "node a.mjs",
            "--impl",
            "m:f",
            "--impl-cmd-per-case",
            "./b",
            "--impl",
            "n:g",
            "--timeout",
            "3",
        ]
    )
    resolved = resolve_run(args, ProjectConfig())
    assert [(o.kind, o.impl) for o in resolved.implementations] == [
        ("command", "node a.mjs"),
        ("python", "m:f"),
        ("command-per-case", "./b"),
        ("python", "n:g"),
    ]
    assert resolved.labels == ("a", "m", "b", "n")
    assert resolved.options == resolved.implementations[0]
    assert all(o.timeout == 3.0 for o in resolved.implementations)
    assert resolved.several


def test_one_implementation_resolves_as_before() -> None:
    args = parse(["s.toml", "--impl", "calc:evaluate"])
    suite, options = resolve(args, ProjectConfig())
    resolved = resolve_run(args, ProjectConfig())
    assert (suite, options) == (Path("s.toml"), RunOptions(impl="calc:evaluate", jobs=0))
    assert resolved.implementations == (options,) and resolved.labels == ("calc",)
    assert not resolved.several
    plain = ResolvedRun(Path("s.toml"), options, ProjectConfig())
    assert plain.implementations == (options,) and plain.labels == ("calc",)
    by_hand = argparse.Namespace(**{**vars(args), "implementations": None, "impl": "x:y"})
    assert resolve(by_hand, ProjectConfig())[1].impl == "x:y"


def test_implementations_named_on_the_command_line(tmp_path: Path) -> None:
    args = parse(
        [
            "s.toml",
            "--impl",
            "tomli=toml_adapters:tomli_parse",
            "--impl",
            "toml_adapters:tomlkit_parse",
            "--impl",
            "toml_adapters:rtoml_parse",
            "--impl-cmd",
            "js=node calc.mjs --fast=1",
            "--impl-cmd-per-case",
            "./impl --mode=x",
        ]
    )
    resolved = resolve_run(args, ProjectConfig())
    assert [(o.kind, o.impl) for o in resolved.implementations] == [
        ("python", "toml_adapters:tomli_parse"),
        ("python", "toml_adapters:tomlkit_parse"),
        ("python", "toml_adapters:rtoml_parse"),
        ("command", "node calc.mjs --fast=1"),
        ("command-per-case", "./impl --mode=x"),
    ]
    # adapters of one module are told apart by their attribute, not -2, -3
    assert resolved.labels == ("tomli", "tomlkit_parse", "rtoml_parse", "js", "impl")
    project = config('[tool.cer]\nsuite = "s.toml"\nimpls = ["a=m:f", "m:g"]\n', tmp_path)
    assert resolve_run(parse([]), project).labels == ("a", "g")  # m:g is not alone in m


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--impl", "é=m:f"], "--impl NAME=…: a label must be letters"),
        (["--impl-cmd", "a b=node x"], "the implementation command"),
        (
            ["--impl", "a=m:f", "--impl-cmd", "a=node x"],
            "the implementation name 'a' is given twice",
        ),
    ],
)
def test_bad_implementation_names_are_usage_errors(argv: list[str], message: str) -> None:
    try:
        resolve_run(parse(["s.toml", *argv]), ProjectConfig())
    except UsageError as exc:
        assert message in str(exc)
    else:
        assert message == "the implementation command"  # 'a b=node x' has no name: a command


def test_labels_split_and_tell_adapters_apart() -> None:
    assert split_label("python", "tomli=toml_adapters:tomli_parse") == (
        "tomli",
        "toml_adapters:tomli_parse",
    )
    assert split_label("python", "pkg.mod:attr") == (None, "pkg.mod:attr")
    assert split_label("command", "js=node calc.mjs") == ("js", "node calc.mjs")
    assert split_label("command", "node calc.mjs --x=1") == (None, "node calc.mjs --x=1")
    assert split_label("command", "'a=b' c") == (None, "'a=b' c")
    with pytest.raises(ValueError, match="a label must be"):
        split_label("python", "x" * 40 + "=m:f")
    named = [
        ("python", "adapters:one"),
        ("python", "adapters:two"),
        ("python", "calc_ref:evaluate"),
        ("python", "calc_ref:evaluate"),
        ("command", "python3 adapters.py"),
    ]
    assert implementation_labels(named) == ("one", "two", "calc_ref", "calc_ref-2", "adapters")


def test_distribution_of_a_module(tmp_path: Path) -> None:
    import importlib.metadata

    found = distribution_of("tomlkit:parse", [])
    assert found == ImplementationOrigin(
        "tomlkit", importlib.metadata.version("tomlkit"), "distribution"
    )
    assert distribution_of("calc_ref:evaluate", [str(EXAMPLES / "calc")]) is None  # local
    assert distribution_of("json:loads", []) is None  # the standard library
    # a distribution's metadata is the implementation's text: kept, shown escaped
    (tmp_path / "fakemod.py").write_text("def f(x):\n    return x\n")
    info = tmp_path / "fake-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake\x1b[2J\nVersion: 1.0\u202e\n")
    (info / "RECORD").write_text("fakemod.py,,\nfake-1.0.dist-info/METADATA,,\n")
    fake = distribution_of("fakemod:f", [str(tmp_path)])
    assert fake == ImplementationOrigin("fake\x1b[2J", "1.0\u202e", "distribution")
    (tmp_path / "other.py").write_text("")
    assert distribution_of("other:f", [str(tmp_path)]) is None  # not in its RECORD


def test_origins_show_escaped_in_the_legend_and_json(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, [("one", "{ output = 1 }")])
    runs = [
        replace(
            make_run("a:f", [result("one", P, obs(1))], suite),
            origin=ImplementationOrigin("evil\x1b[31m", "1\u202e0", "distribution"),
        ),
        replace(
            make_run("b:f", [result("one", P, obs(1))], suite),
            origin=ImplementationOrigin("calc-js", "0.2", "harness"),
        ),
    ]
    matrix = build_matrix(suite, runs)
    text = text_report.render_matrix(matrix, suite)
    assert "\x1b" not in text and "\u202e" not in text
    assert "  a  a:f@0000000000 (evil\\x1b[31m 1\\u202e0) — conformant" in text
    assert "  b  b:f@0000000000 (calc-js 0.2, as the harness declared itself) — conformant" in text
    origins = [i["origin"] for i in matrix_to_dict(matrix, suite)["implementations"]]
    assert origins == [
        {"name": "evil\x1b[31m", "version": "1\u202e0", "source": "distribution"},
        {"name": "calc-js", "version": "0.2", "source": "harness"},
    ]


def config(text: str, tmp_path: Path) -> ProjectConfig:
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    import tomllib

    return ProjectConfig(tomllib.loads(text)["tool"]["cer"], path)


def test_tool_cer_impls(tmp_path: Path) -> None:
    project = config(
        '[tool.cer]\nsuite = "evals.toml"\nimpls = ["calc_ref:evaluate", '
        '{ cmd = "node h.mjs", label = "js" }, { cmd_per_case = "./impl --once" }, '
        '{ impl = "calc_ref:evaluate" }]\n',
        tmp_path,
    )
    resolved = resolve_run(parse([]), project)
    assert [(o.kind, o.impl) for o in resolved.implementations] == [
        ("python", "calc_ref:evaluate"),
        ("command", "node h.mjs"),
        ("command-per-case", "./impl --once"),
        ("python", "calc_ref:evaluate"),
    ]
    assert resolved.labels == ("calc_ref", "js", "impl", "calc_ref-2")
    assert resolved.suite == tmp_path / "evals.toml"
    # The command line replaces the file's implementations, all of them.
    only = resolve_run(parse(["--impl", "other:f"]), project)
    assert [o.impl for o in only.implementations] == ["other:f"]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('impls = ["a:f"]\nimpl = "b:f"', "sets both impls and impl"),
        ("impls = []", "non-empty list"),
        ('impls = "a:f"', "non-empty list"),
        ("impls = [3]", "impls[0] must be a string MODULE:ATTR or a table"),
        ('impls = [{ cmd = "x", impl = "a:f" }]', "exactly one of impl, cmd and cmd_per_case"),
        ('impls = [{ label = "x" }]', "exactly one of impl, cmd and cmd_per_case"),
        ('impls = [{ command = "x" }]', "unknown keys command"),
        ("impls = [{ cmd = 3 }]", "cmd must be a string"),
        ('impls = [{ cmd = "x", label = "no spaces" }]', "label must be"),
        ('impls = [{ cmd = "x", label = "j" }, { impl = "a:f", label = "j" }]', "used twice"),
        ('impls = ["no-colon"]', "MODULE:ATTR"),
        ('impls = [{ cmd = "" }]', "command is empty"),
    ],
)
def test_bad_impls_are_usage_errors(tmp_path: Path, table: str, message: str) -> None:
    project = config(f'[tool.cer]\nsuite = "e.toml"\n{table}\n', tmp_path)
    with pytest.raises(UsageError, match=re.escape(message)):
        resolve_run(parse([]), project)


# ------------------------------------------------------------------ cer run


CASES = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "doubles-two"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[cases]]
name = "doubles-three"
category = "functional"
input = { x = 3 }
expect = { output = 6 }
"""
UNSUPPORTED = """
[[adversarial]]
name = "races"
category = "concurrency"
input = { x = 1 }
expect = { output = 2 }
"""
GOOD = "def f(x):\n    return x * 2\n"
FLOAT = "def f(x):\n    return float(x * 2)\n"
BAD_ON_THREE = "def f(x):\n    return 0 if x == 3 else x * 2\n"


@pytest.fixture(autouse=True)
def _no_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    ("sources", "extra", "code"),
    [
        ([GOOD, GOOD], "", ExitCode.OK),
        ([GOOD, BAD_ON_THREE], "", ExitCode.FAILED),
        ([GOOD, GOOD], UNSUPPORTED, ExitCode.INCOMPLETE),
        ([BAD_ON_THREE, GOOD], UNSUPPORTED, ExitCode.FAILED),
    ],
)
def test_exit_code_is_the_worst_over_all_runs(
    module: Module,
    capsys: pytest.CaptureFixture[str],
    sources: list[str],
    extra: str,
    code: ExitCode,
) -> None:
    module.suite(CASES + extra)
    args = [item for source in sources for item in ("--impl", f"{module.impl(source)}:f")]
    assert main(["run", str(module.root / "evals.toml"), *args, "--no-history", "-q"]) == code
    assert "implementations:" in capsys.readouterr().out


def test_exit_code_ranks_failed_above_incomplete(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, [("one", "{ output = 1 }")])
    ok = make_run("a:f", [result("one", P, obs(1))], suite)
    skipped = make_run("b:f", [result("one", S)], suite)
    failed = make_run("c:f", [result("one", F, obs(2))], suite)
    assert exit_code_for_runs([ok, ok]) == ExitCode.OK
    assert exit_code_for_runs([ok, skipped]) == ExitCode.INCOMPLETE
    assert exit_code_for_runs([skipped, failed, ok]) == ExitCode.FAILED


def test_passing_implementations_that_differ_show_on_all(
    module: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    module.suite(
        CASES.replace(
            "expect = { output = 4 }", 'expect = { output_min = 4, self_reported = ["output"] }'
        )
    )
    good, floaty = module.impl(GOOD), module.impl(FLOAT)
    args = ["run", str(module.root / "evals.toml"), "--impl", f"{good}:f"]
    args += ["--impl", f"{floaty}:f", "--no-history", "-q"]
    code = main(args)
    out = capsys.readouterr().out
    assert code == ExitCode.FAILED  # doubles-three: 6.0 is not 6
    # output_min held for both: the same verdict on what the case asks, in other words
    assert "≠ doubles-two" not in out
    assert (
        "same verdict, different words: 1 case (--agree-on all compares them): doubles-two" in out
    )
    assert main([*args, "--agree-on", "all"]) == ExitCode.FAILED
    out = capsys.readouterr().out
    assert "on whole observations and the verdict" in out
    assert "≠ doubles-two  (functional)  evals.toml:5 [[cases]]  2 pass" in out
    assert f"      {good}  ✔ PASS   output: int 4" in out
    assert f"      {floaty}  ✔ PASS   output: float 4.0" in out
    assert "same verdict, different words" not in out
    with pytest.raises(SystemExit) as refused:
        main([*args, "--agree-on", "elapsed_ms"])
    assert refused.value.code == ExitCode.USAGE
    assert "elapsed_ms is the runner's measurement" in capsys.readouterr().err


def test_agreement_on_expected_keys_chosen_keys_or_everything(tmp_path: Path) -> None:
    suite = make_suite(
        tmp_path,
        [
            ("worded", "{ rejects = true }"),
            ("included", '{ error_includes = "bad" }'),
            ("valued", "{ output = 1 }"),
        ],
    )
    runs = [
        make_run(
            "a:f",
            [
                result("worded", P, obs(None, rejects=True, error="bad input")),
                result("included", P, obs(None, rejects=True, error="bad key")),
                result("valued", P, obs(1, error_type="x")),
            ],
            suite,
        ),
        make_run(
            "b:f",
            [
                result("worded", P, obs(None, rejects=True, error="invalid")),
                result("included", P, obs(None, rejects=True, error="a bad one")),
                result("valued", P, obs(1, error_type="y")),
            ],
            suite,
        ),
    ]
    default = build_matrix(suite, runs)
    assert all(row.agreement is Agreement.AGREE for row in default.rows)
    assert [row.case_name for row in default.words_differ] == ["worded", "included", "valued"]
    assert not any(row.words_differ for row in build_matrix(suite, runs, agree_on="all").rows)
    whole = build_matrix(suite, runs, agree_on="all")
    assert [row.case_name for row in whole.disagreements] == ["worded", "included", "valued"]
    chosen = build_matrix(suite, runs, agree_on=("error_type",))
    assert [row.case_name for row in chosen.disagreements] == ["valued"]
    assert [row.case_name for row in chosen.words_differ] == ["worded", "included"]
    assert matrix_to_dict(chosen, suite)["summary"]["agree_on"] == ["error_type"]
    # a compared key the implementations differ on, with the same status, still disagrees
    b_wrong = make_run(
        "b:f",
        [
            result("worded", P, obs(None, rejects=True, error="invalid")),
            result("included", F, obs(None, rejects=True, error="nope")),
            result("valued", P, obs(1)),
        ],
        suite,
    )
    split = build_matrix(suite, [runs[0], b_wrong])
    assert [row.case_name for row in split.disagreements] == ["included"]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("expected", "expected"), ("all", "all"), ("value, rejects,value", ("value", "rejects"))],
)
def test_agree_on_parses(text: str, parsed: object) -> None:
    assert parse_agree_on(text) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [("value,,x", "empty key"), ("all,value", "stand alone"), ("elapsed_ms", "measurement")],
)
def test_agree_on_refuses(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_agree_on(text)


def test_single_implementation_output_is_unchanged(
    module: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    module.suite(CASES)
    impl = module.impl(BAD_ON_THREE)
    suite = str(module.root / "evals.toml")
    code = main(["run", suite, "--impl", f"{impl}:f", "--no-history"])
    text = capsys.readouterr().out
    assert code == ExitCode.FAILED
    lines = text.splitlines()
    assert lines[0].startswith("✘ FAIL  doubles-three  (functional)  evals.toml:11 [[cases]]")
    assert lines[-2].startswith(f"demo · {impl}:f@")
    assert re.fullmatch(
        r"2 cases: 1 passed, 1 failed, 0 errored, 0 skipped in \d+\.\d\ds "
        r"— nonconformant · sandbox: "
        r"(namespaces \+ landlock ABI \d+|landlock only: .*|landlock ABI \d+|none: .*)"
        r" · network: .*",
        lines[-1],
    )
    assert "agreement" not in text and "implementations:" not in text
    main(["run", suite, "--impl", f"{impl}:f", "--no-history", "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {
        "format",
        "format_version",
        "run",
        "summary",
        "results",
        "coverage",
        "conformance",
        "baseline",
        "flaky",
    }
    assert document["format"] == "cer-results"


def test_json_output_file_prints_the_matrix_summary_line(
    module: Module, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module.suite(CASES)
    a, b = module.impl(GOOD), module.impl(BAD_ON_THREE)
    target = tmp_path / "out" / "matrix.json"
    code = main(
        [
            "run",
            str(module.root / "evals.toml"),
            "--impl",
            f"{a}:f",
            "--impl",
            f"{b}:f",
            "--no-history",
            "--format",
            "json",
            "-o",
            str(target),
        ]
    )
    assert code == ExitCode.FAILED
    assert capsys.readouterr().out == (
        "2 implementations × 2 cases: 1 conformant, 1 nonconformant · 1 disagreement\n"
    )
    assert json.loads(target.read_text())["format"] == "cer-matrix"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--report", "github"], "--report github would write to standard output"),
        (["--report", "json=-"], "--report json would write to standard output"),
        (
            ["-o", "r.impl_1.json", "--report", "json=r.json"],
            "--output and --report json both write r.impl_1.json",
        ),
    ],
)
def test_reports_that_cannot_be_split_are_refused(
    module: Module, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    module.suite(CASES)
    a, b = module.impl(GOOD, "impl_1"), module.impl(GOOD, "impl_2")
    code = main(
        [
            "run",
            str(module.root / "evals.toml"),
            "--impl",
            f"{a}:f",
            "--impl",
            f"{b}:f",
            "--no-history",
            *args,
        ]
    )
    captured = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert message in captured.err
    assert captured.out == ""


def test_failed_reruns_what_any_implementation_failed(
    module: Module, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module.suite(
        CASES
        + UNSUPPORTED.replace("concurrency", "functional")
        .replace("x = 1", "x = 5")
        .replace("output = 2", "output = 10")
    )
    good, bad = module.impl(GOOD), module.impl(BAD_ON_THREE)
    suite = str(module.root / "evals.toml")
    history = str(tmp_path / "h.sqlite")
    both = ["--impl", f"{good}:f", "--impl", f"{bad}:f", "--history", history, "-q"]
    # Nothing recorded yet: the whole suite runs, as pytest's --last-failed does.
    assert (
        main(["run", suite, "--impl", f"{good}:f", "--history", history, "--failed", "-q"])
        == ExitCode.OK
    )
    assert "no recorded run" in capsys.readouterr().err
    assert main(["run", suite, *both]) == ExitCode.FAILED
    # A later run of another implementation does not hide what these two failed.
    other = module.impl(GOOD)
    assert main(["run", suite, "--impl", f"{other}:f", "--history", history, "-q"]) == ExitCode.OK
    capsys.readouterr()
    code = main(["run", suite, *both, "--failed", "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert code == ExitCode.FAILED
    for run in document["runs"]:
        assert {
            r["case_name"]: r["status"] for r in run["results"] if r["reason"] != "deselected"
        } == {"doubles-three": "pass" if run["run"]["implementation"] == f"{good}:f" else "fail"}
    with History.open(Path(history), create=False) as recorded:
        assert len(recorded.runs(None)) == 6
    missing = module.impl(GOOD)
    assert main(["run", suite, *both, "--impl", f"{missing}:f", "--failed"]) == ExitCode.FAILED
    err = capsys.readouterr().err
    assert f"no recorded run of {missing}:f" in err and "running the whole suite" in err


# ------------------------------------------------------- ranking, groups, known failures

GROUPED = """commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "one"
category = "functional"
description = "the first"
tags = ["core", "numbers"]
input = { x = 1 }
expect = { output = 1 }

[[cases]]
name = "two"
category = "functional"
tags = ["numbers"]
input = { x = 2 }
expect = { output = 2 }

[[adversarial]]
name = "three"
category = "input-validation"
input = { x = "bad" }
expect = { rejects = true }
"""


def grouped_runs(suite: Suite) -> list[RunResult]:
    def rejected(name: str, status: Status) -> CaseResult:
        return CaseResult(
            name, "adversarial", "input-validation", status, observation=obs(None, rejects=True)
        )

    a = [result("one", P, obs(1)), result("two", P, obs(2)), rejected("three", P)]
    b = [result("one", F, obs(0)), result("two", P, obs(2)), rejected("three", F)]
    c = [result("one", P, obs(1)), result("two", E, reason="boom"), result("three", S)]
    return [make_run(f"{n}:f", r, suite) for n, r in (("a", a), ("b", b), ("c", c))]


def test_ranking_groups_and_known_failures(tmp_path: Path) -> None:
    path = tmp_path / "evals.toml"
    path.write_text(GROUPED)
    suite = load_suite(path)
    runs = grouped_runs(suite)
    known = [None, {"one": Known("off by one", "https://example.invalid/7")}, None]
    matrix = build_matrix(suite, runs, ["a", "b", "c"], known=known)
    assert matrix.row("one").states == ("pass", "known", "pass")
    assert matrix.row("three").states == ("pass", "fail", "skipped")
    # fewest unsuccessful first; a known failure is still not a success
    assert [(s.rank, s.label, s.unsuccessful, s.percent) for s in matrix.ranking] == [
        (1, "a", 0, 100.0),
        (2, "c", 1, 33.3),
        (3, "b", 2, 33.3),
    ]
    b = matrix.ranking[2]
    assert (b.passed, b.failed, b.errored, b.skipped, b.known) == (1, 1, 0, 0, 1)
    assert [(name, [r.case_name for r in rows]) for name, rows in matrix.grouped("tag")] == [
        ("core", ["one"]),
        ("numbers", ["one", "two"]),
        ("(no tag)", ["three"]),
    ]
    assert [(name, [r.case_name for r in rows]) for name, rows in matrix.grouped("array")] == [
        ("cases", ["one", "two"]),
        ("adversarial", ["three"]),
    ]
    document = matrix_to_dict(matrix, suite)
    one = document["cases"][0]
    assert one["description"] == "the first" and one["tags"] == ["core", "numbers"]
    assert one["array"] == "cases" and one["input"] == {"x": 1}
    assert one["states"] == {"a": "pass", "b": "known", "c": "pass"}
    assert one["known"] == {"b": {"reason": "off by one", "link": "https://example.invalid/7"}}
    assert document["cases"][2]["array"] == "adversarial"
    assert [(r["label"], r["known"], r["unsuccessful"]) for r in document["ranking"]] == [
        ("a", 0, 0),
        ("c", 0, 1),
        ("b", 1, 2),
    ]
    text = text_report.render_matrix(matrix, suite, group_by="tag")
    rows = _table_rows(text)
    assert rows[1:6] == [
        ["tag core (1 of 1)"],
        ["one", "✔ PASS", "◇ KNOWN", "✔ PASS", "≠ differ"],
        ["tag numbers (2 of 2)"],
        ["one", "✔ PASS", "◇ KNOWN", "✔ PASS", "≠ differ"],
        ["two", "✔ PASS", "✔ PASS", "‼ ERROR", "≠ differ"],
    ]
    assert ["known", "0", "1", "0"] in rows
    assert "ranking (fewest unsuccessful cases first):" in text
    assert "  1. a  ████████████████████  100.0%  3 pass · 0 fail · 0 error · 0 skip" in text
    assert "  3. b  ███████▒▒▒▒▒▒▒▓▓▓▓▓▓   33.3%  1 pass · 1 fail · 0 error · 0 skip · 1 known" in (
        text
    )
    assert "     known (1): off by one" in text
    assert "      b (known)  ✘ FAIL   output: int 0" in text
    assert "      input: { x = 1 }" in text


def test_bars_never_hide_a_failure() -> None:
    assert text_report.bar_widths([999, 1, 0], 20) == [19, 1, 0]
    assert text_report.bar_widths([0, 0], 20) == [0, 0]
    assert sum(text_report.bar_widths([3, 3, 3], 20)) == 20
    assert Standing(1, "a", 999, 1, 0, 0, 0, 1000).percent == 99.9


@pytest.mark.slow
def test_known_failures_per_implementation_from_the_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "known.toml"
    baseline.write_text(
        '[[known]]\ncase = "power-is-right-associative"\nstatus = "fail"\n'
        'reason = "parses ** left to right"\nlink = "https://example.invalid/1"\n'
        'implementation = "sloppy"\n'
    )
    args = [
        "run",
        str(CALC),
        "--impl",
        "calc_ref:evaluate",
        "--impl",
        "sloppy=calc_sloppy:evaluate",
    ]
    code = main([*args, "--baseline", str(baseline), "--format", "json", "--no-history"])
    assert code == ExitCode.FAILED  # seven unlisted failures are still regressions
    document = json.loads(capsys.readouterr().out)
    power = next(c for c in document["cases"] if c["case_name"] == "power-is-right-associative")
    assert power["states"] == {"calc_ref": "pass", "sloppy": "known"}
    assert power["statuses"] == {"calc_ref": "pass", "sloppy": "fail"}
    assert power["known"] == {
        "sloppy": {"reason": "parses ** left to right", "link": "https://example.invalid/1"}
    }
    sloppy = document["ranking"][1]
    assert (sloppy["label"], sloppy["failed"], sloppy["known"]) == ("sloppy", 7, 1)
    assert sum(c["states"]["sloppy"] == "known" for c in document["cases"]) == 1


# ------------------------------------------------------------------ who is in the matrix


def test_adapters_kept_in_one_module_have_ids_of_their_own(tmp_path: Path) -> None:
    from cer.engine.identity import identify

    module = tmp_path / "adapters.py"
    module.write_text("def a(x):\n    return x\n\n\ndef b(x):\n    return x\n")
    first = identify("adapters:a", [str(module)]).implementation_id
    second = identify("adapters:b", [str(module)]).implementation_id
    assert first.partition("@")[2] != second.partition("@")[2]
    assert identify("adapters:a", [str(module)]).implementation_id == first  # stable


def test_an_implementation_names_the_distribution_it_adapts(tmp_path: Path) -> None:
    args = parse(
        [
            "s.toml",
            "--impl",
            "js=adapters:check_jsonschema,dist=jsonschema",
            "--impl",
            "adapters:check_other",
        ]
    )
    resolved = resolve_run(args, ProjectConfig())
    assert [(o.impl, o.dist) for o in resolved.implementations] == [
        ("adapters:check_jsonschema", "jsonschema"),
        ("adapters:check_other", None),
    ]
    assert resolved.labels == ("js", "check_other")
    project = config(
        '[tool.cer]\nsuite = "s.toml"\nimpls = ["a=m:f,dist=tomli", '
        '{ impl = "m:g", label = "g", dist = "tomlkit" }]\n',
        tmp_path,
    )
    assert [(o.impl, o.dist) for o in resolve_run(parse([]), project).implementations] == [
        ("m:f", "tomli"),
        ("m:g", "tomlkit"),
    ]
    single = config('[tool.cer]\nsuite = "s.toml"\nimpl = "m:f, dist=tomli"\n', tmp_path)
    assert resolve_run(parse([]), single).options.dist == "tomli"


@pytest.mark.parametrize(
    ("argv", "table", "message"),
    [
        (["s.toml", "--impl", "m:f,dist=no such"], None, "dist= must name an installed"),
        (None, 'impls = [{ cmd = "node x", dist = "y" }]', "dist must name"),
        (None, 'impls = [{ impl = "m:f", dist = 3 }]', "dist must name"),
    ],
)
def test_a_bad_dist_is_a_usage_error(
    tmp_path: Path, argv: list[str] | None, table: str | None, message: str
) -> None:
    project = ProjectConfig()
    if table is not None:
        project = config(f'[tool.cer]\nsuite = "e.toml"\n{table}\n', tmp_path)
    with pytest.raises(UsageError, match=re.escape(message)):
        resolve_run(parse(argv if argv is not None else []), project)
    # A command's words are its own: ",dist=" in one is no distribution.
    command = resolve_run(parse(["s.toml", "--impl-cmd", "./x a,dist=b"]), ProjectConfig())
    assert (command.options.impl, command.options.dist) == ("./x a,dist=b", None)


ADAPTERS = """\
import json
import tomlkit as tk
from tomlkit import parse


def with_alias(text):
    return tk.parse(text)


def with_import_inside(text):
    import tomlkit.api
    return tomlkit.api.parse(text)


def with_from_import(text):
    return parse(text)


def standard_only(text):
    return json.loads(text)


def _helper(text):
    return text
"""


def test_the_adapted_distribution_is_found_from_what_the_adapter_imports(
    tmp_path: Path,
) -> None:
    import importlib.metadata

    from cer.engine.python.distribution import adapted_distribution, named_distribution, origin_of

    (tmp_path / "toml_adapters.py").write_text(ADAPTERS)
    search = [str(tmp_path)]
    tomlkit = ImplementationOrigin("tomlkit", importlib.metadata.version("tomlkit"), "distribution")
    for attr in ("with_alias", "with_import_inside", "with_from_import"):
        assert adapted_distribution(f"toml_adapters:{attr}", search) == tomlkit, attr
    assert adapted_distribution("toml_adapters:standard_only", search) is None
    assert adapted_distribution("toml_adapters:_helper", search) is None
    assert named_distribution("TOMLKit", search) == tomlkit  # as pip compares names
    assert named_distribution("no-such-dist", search) is None
    assert origin_of("toml_adapters:standard_only", search, "tomlkit") == (tomlkit, None)
    origin, note = origin_of("toml_adapters:standard_only", search, "no-such-dist")
    assert origin is None and note == "dist=no-such-dist: no distribution of that name is installed"
    assert origin_of("toml_adapters:with_alias", search) == (tomlkit, None)


def test_an_adapter_importing_two_distributions_names_none(tmp_path: Path) -> None:
    from cer.engine.python.distribution import adapted_distribution

    (tmp_path / "both.py").write_text(
        "import tomlkit\nimport jinja2\n\n\ndef f(text):\n    return tomlkit, jinja2\n"
    )
    assert adapted_distribution("both:f", [str(tmp_path)]) is None


def test_the_matrix_legend_shows_each_adapters_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.metadata

    (tmp_path / "toml_adapters.py").write_text(ADAPTERS)
    (tmp_path / "evals.toml").write_text(
        'commonsformat_evals = "0.2"\n\n[[cases]]\nname = "one"\ncategory = "functional"\n'
        'input = { text = "a = 1" }\nexpect = { value = { a = 1 } }\n'
    )
    monkeypatch.chdir(tmp_path)
    argv = ["run", "evals.toml", "--no-history", "--impl", "toml_adapters:with_alias"]
    argv += ["--impl", "json=toml_adapters:standard_only,dist=jinja2"]
    main(argv)
    out = capsys.readouterr().out
    legend = out.split("implementations:\n", 1)[1]
    assert f"(tomlkit {importlib.metadata.version('tomlkit')})" in legend.splitlines()[0]
    assert f"(Jinja2 {importlib.metadata.version('jinja2')})" in legend.splitlines()[1]


def test_an_adapter_that_is_no_regular_file_or_no_python_names_nothing(tmp_path: Path) -> None:
    import os

    from cer.engine.python.distribution import _read_source, adapted_distribution

    (tmp_path / "deep.py").write_text("def f(x):\n    return " + "(" * 5000 + "x" + ")" * 5000)
    assert adapted_distribution("deep:f", [str(tmp_path)]) is None
    os.mkfifo(tmp_path / "fifo.py")
    assert adapted_distribution("fifo:f", [str(tmp_path)]) is None  # never blocks
    assert _read_source(str(tmp_path / "fifo.py")) is None
