"""The pytest plugin: cases as pytest items, judged by cer's engine, reported as pytest
reports them (docs/pytest.md).

A test of what the session's process does (its entry point, as a user starts it;
xdist's workers) runs pytest in a subprocess, so that nothing of this session's own
pytest leaks in; the others run their session in this process, the plugin still loaded
through its entry point, this session's variables hidden and its modules put back
(``support.pytest_in_process``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import support
from cer.config import ProjectConfig, UsageError
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.history.database import History
from cer.model import Status
from cer.pytest_plugin import configured_suites, marker_word
from cer.suite.loader import load_suite
from support import NO_TEST_PLUGINS

pytestmark = pytest.mark.slow(
    reason="a pytest session per test, over the 70 calc cases, as a user starts one"
)

ROOT = support.ROOT
CALC = ROOT / "examples" / "calc" / "evals.toml"


def pytest_run(
    *args: str | Path, cwd: Path = ROOT, cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["NO_COLOR"] = "1"
    cache_args = ["-o", f"cache_dir={cache}"] if cache else ["-p", "no:cacheprovider"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *NO_TEST_PLUGINS, *cache_args, *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def pytest_session(
    *args: str | Path, cwd: Path = ROOT, cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """:func:`pytest_run`'s session run in this process (``support.pytest_in_process``),
    for the tests that read a session's report and exit code, not its process."""
    cache_args = ["-o", f"cache_dir={cache}"] if cache else ["-p", "no:cacheprovider"]
    return support.pytest_in_process(["-q", *cache_args, *map(str, args)], cwd)


def junit(path: Path) -> dict[str, tuple[str, str]]:
    """Every testcase of a JUnit file: name → (outcome, message text)."""
    cases: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        assert name not in cases, f"{name} reported twice"
        outcome, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, text = child.tag, child.text or ""
            elif child.tag == "skipped":
                outcome, text = child.tag, child.get("message", "")
        cases[name] = (outcome, text)
    return cases


@functools.cache
def cer_results(impl: str) -> dict[str, tuple[Status, str]]:
    """What cer's own run of calc decides for ``impl``, case by case: run once for the
    module, however many tests compare a pytest session with it."""
    run = run_suite(load_suite(CALC), RunOptions(impl=impl, timeout=10.0))
    return {r.case_name: (r.status, r.reason or "") for r in run.results}


def test_reference_passes_every_case_as_an_item(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    done = pytest_run("--cer-impl", "calc_ref:evaluate", CALC, f"--junitxml={report}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "70 passed" in done.stdout
    cases = junit(report)
    assert len(cases) == 70
    assert set(cases) == {case.name for case in load_suite(CALC).cases}


@pytest.fixture(scope="module")
def sloppy_session(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """One pytest session over calc with calc_sloppy, which several tests read: its
    output, its JUnit XML file and its cache folder (for --lf)."""
    where = tmp_path_factory.mktemp("sloppy")
    report, cache = where / "junit.xml", where / "cache"
    done = pytest_session(
        "--cer-impl", "calc_sloppy:evaluate", CALC, f"--junitxml={report}", cache=cache
    )
    return done, report, cache


def test_sloppy_fails_what_cer_run_fails_with_the_same_reasons(
    sloppy_session: tuple[subprocess.CompletedProcess[str], Path, Path],
) -> None:
    done, report, _ = sloppy_session
    assert done.returncode == 1
    expected = {
        name: reason
        for name, (status, reason) in cer_results("calc_sloppy:evaluate").items()
        if status is Status.FAIL
    }
    cases = junit(report)
    failed = {name for name, (outcome, _) in cases.items() if outcome == "failure"}
    assert failed == set(expected) and len(failed) == 8
    for name, reason in expected.items():
        for line in reason.splitlines():
            assert f"E   {line}" in cases[name][1]
    # the failure is cer's verdict, not a traceback of the plugin
    assert "pytest_plugin.py" not in done.stdout
    assert "E   value: expected float 2.0, observed int 2" in done.stdout


def test_errored_is_a_pytest_error_and_skipped_a_skip(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text(
        textwrap.dedent(
            """
            commonsformat_evals = "0.2"
            target = "t"

            [[cases]]
            name = "fine"
            category = "functional"
            input = { x = 1 }
            expect = { value = 1 }
            tags = ["skip", "xfail", "area:one"]

            [[cases]]
            name = "raises"
            category = "functional"
            input = { x = 2 }
            expect = { value = 2 }

            [[cases]]
            name = "unsupported"
            category = "concurrency"
            input = { x = 3 }
            expect = { value = 3 }
            """
        )
    )
    (tmp_path / "impl.py").write_text(
        "def f(x):\n    if x == 2:\n        raise RuntimeError('kaboom')\n    return x\n"
    )
    report = tmp_path / "junit.xml"
    done = pytest_session(
        "--cer-impl",
        "impl:f",
        "evals.toml",
        "--strict-markers",
        f"--junitxml={report}",
        "-m",
        "cer_skip and cer_xfail and area_one",
        cwd=tmp_path,
    )
    # the tags skip and xfail became cer_skip and cer_xfail: they neither skip the
    # case nor turn its result into an expected failure
    assert "1 passed, 2 deselected" in done.stdout, done.stdout + done.stderr
    done = pytest_session(
        "--cer-impl", "impl:f", "evals.toml", f"--junitxml={report}", cwd=tmp_path
    )
    assert done.returncode == 1
    cases = junit(report)
    assert cases["fine"][0] == "passed"
    assert cases["raises"][0] == "error"
    assert "E   the implementation raised RuntimeError: kaboom" in cases["raises"][1]
    assert cases["unsupported"] == ("skipped", "category not supported: concurrency")
    assert "1 passed, 1 skipped, 1 error" in done.stdout


def test_selection_options_pick_items(tmp_path: Path) -> None:
    done = pytest_session("--cer-impl", "calc_sloppy:evaluate", CALC, "-k", "division")
    assert "5 failed, 9 passed, 56 deselected" in done.stdout, done.stdout
    done = pytest_session(
        "--cer-impl", "calc_sloppy:evaluate", CALC, "-m", "resource", "--strict-markers"
    )
    resource = [c for c in load_suite(CALC).cases if c.category == "resource"]
    assert f"1 failed, {len(resource) - 1} passed, {70 - len(resource)} deselected" in (done.stdout)


def test_last_failed_and_exitfirst(
    sloppy_session: tuple[subprocess.CompletedProcess[str], Path, Path],
) -> None:
    first, _, cache = sloppy_session
    assert "8 failed, 62 passed" in first.stdout
    again = pytest_session("--cer-impl", "calc_sloppy:evaluate", CALC, "--lf", cache=cache)
    assert "8 failed, 62 deselected" in again.stdout, again.stdout
    stopped = pytest_session("--cer-impl", "calc_sloppy:evaluate", CALC, "-x")
    # the first failing case is the 8th: pytest stops there, and so did the cer run
    assert "1 failed, 7 passed" in stopped.stdout, stopped.stdout
    # cases already handed to cer's workers may finish, the rest of the suite never runs
    found = re.search(
        r"70 cases: \d+ passed, (\d+) failed, 0 errored, (\d+) skipped", stopped.stdout
    )
    assert found is not None, stopped.stdout
    assert int(found.group(2)) >= 40


def test_xdist_workers_report_every_case_once(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    done = pytest_run("--cer-impl", "calc_sloppy:evaluate", CALC, "-n", "2", f"--junitxml={report}")
    assert "8 failed, 62 passed" in done.stdout, done.stdout + done.stderr
    cases = junit(report)
    assert len(cases) == 70
    expected = {n for n, (s, _) in cer_results("calc_sloppy:evaluate").items() if s is Status.FAIL}
    assert {n for n, (o, _) in cases.items() if o == "failure"} == expected
    # the workers' results make one run for the whole suite
    assert "70 cases: 62 passed, 8 failed, 0 errored, 0 skipped" in done.stdout


def test_history_records_the_run_like_cer_run(tmp_path: Path) -> None:
    database = tmp_path / "history.sqlite"
    done = pytest_session(
        "--cer-impl",
        "calc_sloppy:evaluate",
        CALC,
        "-k",
        "not division",
        "--cer-history-path",
        database,
    )
    assert "3 failed, 53 passed, 14 deselected" in done.stdout, done.stdout
    assert f"recorded in {database}" in done.stdout
    with History.open(database, create=False) as history:
        (record,) = history.runs(10)
        run = history.load_run(record.run_id)
    statuses = {r.case_name: (r.status, r.reason) for r in run.results}
    assert len(statuses) == 70
    assert statuses["division-chain-left-to-right"] == (Status.SKIPPED, "deselected")
    assert statuses["power-is-right-associative"][0] is Status.FAIL
    assert sum(status is Status.PASS for status, _ in statuses.values()) == 53
    assert run.conditions is not None  # the run says which cases pytest chose, and how
    assert run.conditions.selection.named == 56
    assert run.conditions.selection.chosen_by == "pytest -k 'not division'"


def _project(tmp_path: Path, cer_table: str) -> Path:
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "evals.toml").write_text(CALC.read_text())
    shutil.copytree(CALC.parent / "fixtures", tmp_path / "spec" / "fixtures")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text((CALC.parent / "calc_ref.py").read_text())
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    (tmp_path / "tests" / "evals.toml").write_text(CALC.read_text())
    (tmp_path / "settings.toml").write_text("name = 'x'\n")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n"
        'testpaths = ["tests"]\n'
        'markers = ["functional: our own marker"]\n\n' + cer_table
    )
    return tmp_path


def test_a_plain_pytest_run_is_left_alone(tmp_path: Path) -> None:
    project = _project(
        tmp_path, '[tool.cer]\nsuite = "spec/evals.toml"\nimpl = "calc:evaluate"\npaths = ["src"]\n'
    )
    done = pytest_session("--strict-markers", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "===== cer =====" not in done.stdout.replace("=" * 30, "=====")
    done = pytest_session(".", cwd=project)
    assert "1 passed" in done.stdout, done.stdout


def test_pytest_suites_are_collected_by_a_bare_pytest(tmp_path: Path) -> None:
    table = (
        '[tool.cer]\nimpl = "calc:evaluate"\npaths = ["src"]\npytest_suites = ["spec/evals.toml"]\n'
    )
    project = _project(tmp_path, table)
    done = pytest_session("--strict-markers", "-m", "functional and area_literals", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    literals = [
        c
        for c in load_suite(CALC).cases
        if c.category == "functional" and "area:literals" in c.tags
    ]
    # functional is the project's own marker: the cases share it
    assert f"{len(literals)} passed" in done.stdout
    done = pytest_session(cwd=project)
    assert "71 passed" in done.stdout, done.stdout
    done = pytest_session("tests/test_plain.py", cwd=project)
    assert "1 passed" in done.stdout


def test_a_suite_without_an_implementation_is_a_collection_error(tmp_path: Path) -> None:
    done = pytest_session(CALC, cwd=tmp_path)
    assert done.returncode != 0
    assert "no implementation given: pass --cer-impl MODULE:ATTR" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("functional", "functional"),
        ("input-validation", "input_validation"),
        ("area:literals", "area_literals"),
        ("upstream-section:6.1", "upstream_section_6_1"),
        ("9lives", "cer_9lives"),
        ("_private", "cer_private"),
    ],
)
def test_marker_words(text: str, word: str) -> None:
    assert marker_word(text) == word


def test_configured_suites_are_checked(tmp_path: Path) -> None:
    config = ProjectConfig(
        {"pytest_suites": ["a/evals.toml", {"suite": "b/evals.toml", "impl": "m:f"}]},
        tmp_path / "pyproject.toml",
    )
    first, second = configured_suites(config)
    assert first.path == (tmp_path / "a" / "evals.toml").resolve()
    assert first.implementation is None
    assert second.implementation == ("impl", "m:f")
    for bad in ("spec/evals.toml", [{"impl": "m:f"}], [{"suite": "s", "colour": 1}]):
        with pytest.raises(UsageError, match="pytest_suites"):
            configured_suites(ProjectConfig({"pytest_suites": bad}, tmp_path / "pyproject.toml"))


def test_an_unreadable_tool_cer_does_not_stop_a_plain_run(tmp_path: Path) -> None:
    project = _project(tmp_path, '[tool.cer]\ncolour = "red"\n')
    done = pytest_session(cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "unknown [tool.cer] keys: colour" in done.stdout + done.stderr
    done = pytest_session("--cer-impl", "calc:evaluate", "spec/evals.toml", cwd=project)
    assert done.returncode == 4
    assert "unknown [tool.cer] keys: colour" in done.stderr


def test_the_implementation_comes_from_ini_or_the_suite_entry(tmp_path: Path) -> None:
    project = _project(tmp_path, '[tool.cer]\npaths = ["src"]\n')
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    pyproject.write_text(text.replace("testpaths", 'cer_impl = "calc:evaluate"\ntestpaths'))
    done = pytest_session("spec/evals.toml", "-k", "literal", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "calc:evaluate@" in done.stdout
    (project / "src" / "other.py").write_text("def evaluate(expr):\n    return 0\n")
    pyproject.write_text(
        text + 'pytest_suites = [{ suite = "spec/evals.toml", impl = "other:evaluate" }]\n'
    )
    done = pytest_session("-k", "integer-literal", cwd=project)
    assert "1 failed" in done.stdout, done.stdout
    assert "other:evaluate@" in done.stdout
    assert "E   value: expected int 42, observed int 0" in done.stdout


def test_stepwise_stops_at_the_first_failure_and_resumes_there(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = pytest_session("--cer-impl", "calc_sloppy:evaluate", CALC, "--sw", cache=cache)
    assert "1 failed, 7 passed" in first.stdout, first.stdout
    second = pytest_session("--cer-impl", "calc_sloppy:evaluate", CALC, "--sw", cache=cache)
    # it starts again at the case that failed (still failing), and stops there
    assert "1 failed, 7 deselected" in second.stdout, second.stdout


def test_sandbox_options_reach_the_run(tmp_path: Path) -> None:
    done = pytest_session(
        "--cer-impl", "calc_ref:evaluate", CALC, "--cer-sandbox", "off", "--cer-network", "deny"
    )
    assert done.returncode != 0
    assert "needs the sandbox, which --sandbox off turns off" in done.stdout, done.stdout
