"""The pytest plugin's known-failures baseline (``--cer-baseline``, ``cer_baseline``,
``[tool.cer] baseline``): its cases are xfail(strict=True), so pytest's outcome agrees
with ``cer run --baseline`` on every row of its table (docs/ci.md, docs/pytest.md).

One pytest session holds every row at once, read back from its JUnit XML file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from cer.history.database import History
from cer.model import RunSelection
from cer.text.tracebacks import RUNNER_DIR
from pytest_plugin.test_plugin import junit, pytest_run, pytest_session

SUITE = "".join(
    f'\n[[cases]]\nname = "{name}"\ncategory = "functional"\n'
    f'input = {{ op = "{op}" }}\nexpect = {{ output = 1 }}\n'
    for name, op in (
        ("adds", "ok"),
        ("tabs-expand", "fail"),
        ("crashes", "raise"),
        ("fixed", "ok"),
        ("regress-err", "raise"),
        ("regress-fail", "fail"),
        ("new-fail", "fail"),
    )
)

IMPL = """
def run(op):
    if op == "raise":
        raise RuntimeError("boom")
    return 1 if op == "ok" else 2
"""

KNOWN = """
[[known]]
case = "tabs-*"
status = "fail"
reason = "tabs not expanded"

[[known]]
case = "crashes"
status = "errored"
reason = "raises on purpose"
link = "https://example.org/14"

[[known]]
case = "fixed"
status = "fail"
reason = "was broken"

[[known]]
case = "regress-err"
status = "fail"
reason = "listed as a failure"

[[known]]
case = "regress-fail"
status = "errored"
reason = "listed as an error"
"""

EXPECTED = {
    # a listed case failing (or erroring) as listed: xfailed
    "tabs-expand": "skipped",
    "crashes": "skipped",
    # an unlisted case that passes
    "adds": "passed",
    # a listed case that passes: stale, XPASS(strict) fails the session
    "fixed": "failure",
    # a listed case failing with the other status than listed: a regression
    "regress-err": "error",
    "regress-fail": "failure",
    # an unlisted failure: a regression
    "new-fail": "failure",
}


def module_with(folder: Path, baseline: str = KNOWN) -> Path:
    header = 'commonsformat_evals = "0.2"\ntarget = "demo"\n'
    (folder / "evals.toml").write_text(header + SUITE, encoding="utf-8")
    (folder / "impl.py").write_text(IMPL, encoding="utf-8")
    (folder / "known.toml").write_text(baseline, encoding="utf-8")
    return folder


def test_every_row_of_the_baseline_table(tmp_path: Path) -> None:
    folder = module_with(tmp_path)
    report = tmp_path / "junit.xml"
    done = pytest_session(
        "evals.toml", "--cer-impl", "impl:run", "--cer-baseline", "known.toml",
        "-rxX", f"--junitxml={report}", cwd=folder,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    cases = junit(report)
    assert {name: outcome for name, (outcome, _) in cases.items()} == EXPECTED
    assert "3 failed, 1 passed, 2 xfailed, 1 error" in done.stdout
    assert "[XPASS(strict)] known fail (known.toml:13): was broken" in cases["fixed"][1]
    assert "known errored (known.toml:7): raises on purpose (https://example.org/14)" in (
        done.stdout
    )
    assert "known fail (known.toml:2): tabs not expanded" in done.stdout
    # The regressions keep cer's own failure text.
    assert "RuntimeError: boom" in cases["regress-err"][1]
    # Its implementation traceback is the implementation's, without the runner's frames.
    assert "runner frames hidden]" in cases["regress-err"][1]
    assert 'impl.py", line 4, in run' in cases["regress-err"][1]
    assert str(RUNNER_DIR) not in cases["regress-err"][1]
    assert '"regress-fail" (functional) failed' in cases["regress-fail"][1]
    # The cer section's verdict says what cer run's does.
    assert "nonconformant: 2 known failures, 3 regressions, 1 stale baseline entry" in (done.stdout)


@pytest.mark.slow(reason="a pytest session with two xdist workers, each starting pytest")
def test_tool_cer_baseline_under_xdist(tmp_path: Path) -> None:
    """``baseline`` in ``[tool.cer]`` is the session's baseline, and the xdist workers
    mark the cases as the single process does."""
    folder = module_with(tmp_path)
    (folder / "pyproject.toml").write_text(
        '[tool.cer]\nimpl = "impl:run"\nbaseline = "known.toml"\n', encoding="utf-8"
    )
    report = tmp_path / "junit.xml"
    done = pytest_run("evals.toml", "-n", "2", f"--junitxml={report}", cwd=folder)
    assert done.returncode == 1, done.stdout + done.stderr
    assert {name: outcome for name, (outcome, _) in junit(report).items()} == EXPECTED
    assert "nonconformant: 2 known failures, 3 regressions, 1 stale baseline entry" in (done.stdout)


def test_a_listed_failure_passes_the_session(tmp_path: Path) -> None:
    folder = module_with(tmp_path, KNOWN.split('[[known]]\ncase = "fixed"')[0])
    done = pytest_session(
        "evals.toml::tabs-expand", "evals.toml::crashes", "evals.toml::adds",
        "--cer-impl", "impl:run", "--cer-baseline", "known.toml",
        "--cer-history-path", tmp_path / "h.sqlite", cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 2 xfailed" in done.stdout
    # The recorded run says what it was held against, and which cases pytest chose.
    with History.open(tmp_path / "h.sqlite", create=False) as history:
        (record,) = history.runs(10)
        conditions = history.load_run(record.run_id).conditions
    assert conditions is not None
    assert (
        conditions.baseline_sha256
        == hashlib.sha256((folder / "known.toml").read_bytes()).hexdigest()
    )
    assert conditions.selection == RunSelection(named=3, chosen_by="pytest")


@pytest.mark.parametrize(
    ("baseline", "given", "message"),
    [
        (
            KNOWN + '\n[[known]]\ncase = "tab-expand"\nstatus = "fail"\nreason = "typo"\n',
            ("--cer-baseline", "known.toml"),
            "known.toml:28: case 'tab-expand' names no case of ",
        ),
        (
            '[[known]]\ncase = 1\nstatus = "fail"\nreason = "x"\n',
            ("-o", "cer_baseline=known.toml"),  # the ini option names it as well
            "case must be a string",
        ),
    ],
    ids=["entry-naming-no-case", "malformed-by-ini"],
)
def test_a_baseline_that_cannot_be_used_is_a_usage_error(
    tmp_path: Path, baseline: str, given: tuple[str, str], message: str
) -> None:
    folder = module_with(tmp_path, baseline)
    done = pytest_session("evals.toml", "--cer-impl", "impl:run", *given, cwd=folder)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "ERROR: cer: baseline: " in done.stderr and message in done.stderr
    assert "Traceback" not in done.stderr
    assert "passed" not in done.stdout  # nothing ran
