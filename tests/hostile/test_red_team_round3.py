"""Attacks on what a known-failures baseline, a matrix and the worker keep believing.

Each test here once found a hole: a regression hidden behind another implementation's
baseline entry, and so on. Each asserts the truthful outcome.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cer.cli.exits import ExitCode
from cer.cli.main import main
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import Status
from cer.suite.loader import load_suite

SUITE = """\
commonsformat_evals = "0.2"
target = "calc"

[[cases]]
name = "one"
category = "functional"
input = { value = 1 }
expect = { value = 1 }

[[cases]]
name = "two"
category = "functional"
input = { value = 2 }
expect = { value = 2 }
"""

WRONG_ON_TWO = 'def evaluate(value):\n    return {"value": 0 if value == 2 else value}\n'


def test_an_entry_for_one_column_does_not_list_another_columns_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry names the column ``calc`` of the matrix (the label the report shows).
    The other column, ``calc-2``, is the module ``calc``, whose short name is ``calc``
    too: its failure of the same case once counted as known through that entry, and a
    matrix with a regression exited 0."""
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "released.py").write_text(WRONG_ON_TWO, encoding="utf-8")
    (tmp_path / "calc.py").write_text(WRONG_ON_TWO, encoding="utf-8")
    (tmp_path / "known.toml").write_text(
        '[[known]]\ncase = "two"\nstatus = "fail"\nreason = "the released one"\n'
        'implementation = "calc"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "run",
            "evals.toml",
            "--impl",
            "calc=released:evaluate",
            "--impl",
            "calc:evaluate",
            "--baseline",
            "known.toml",
            "--format",
            "json",
            "--no-history",
        ]
    )
    document = json.loads(capsys.readouterr().out)
    two = next(c for c in document["cases"] if c["case_name"] == "two")
    assert [i["label"] for i in document["implementations"]] == ["calc", "calc-2"]
    assert two["states"] == {"calc": "known", "calc-2": "fail"}
    assert code == ExitCode.FAILED  # calc-2's failure is a regression


LOWERS_ITS_LIMIT = """\
import resource


def evaluate(value):
    if value == 1:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (20, hard))
        return {"value": 1}
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {"value": 2 if soft != 20 else -soft}
"""


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_a_limit_a_case_lowers_in_the_worker_is_not_the_next_cases(
    tmp_path: Path, sandbox: str
) -> None:
    """Without isolation the case runs in the worker: a limit it lowered on itself
    (``setrlimit``, which the seccomp filter allows) once stayed for the next case,
    which saw 20 files where it had started with the worker's limit."""
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "lowers.py").write_text(LOWERS_ITS_LIMIT, encoding="utf-8")
    suite = load_suite(tmp_path / "evals.toml")
    options = RunOptions("lowers:evaluate", isolation="none", sandbox=sandbox, timeout=10.0)
    run = run_suite(suite, options)
    assert [r.status for r in run.results] == [Status.PASS, Status.PASS], [
        r.reason for r in run.results
    ]
    assert "[the case changed a resource limit; the worker was recycled]" in run.results[0].stderr


ERRORED_ENTRIES = """\
[[known]]
case = "one"
status = "errored"
reason = "raises on this input"

[[known]]
case = "two"
status = "errored"
reason = "raises on this input too"
"""


def test_a_case_not_run_is_never_the_errored_failure_its_entry_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every case is listed as errored (say: reran with ``--failed``, which runs only
    the listed ones). An implementation that could not even be imported marks each case
    ``not run: …``, errored: it once counted as each known failure, and the run exited 0
    having run nothing."""
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "broken.py").write_text('raise ImportError("gone")\n', encoding="utf-8")
    (tmp_path / "known.toml").write_text(ERRORED_ENTRIES, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    args = ["run", "evals.toml", "--impl", "broken:evaluate", "--baseline", "known.toml"]
    code = main([*args, "--format", "json", "--no-history"])
    document = json.loads(capsys.readouterr().out)
    assert code == ExitCode.FAILED
    check = document["baseline"]
    assert check["known_failures"] == []
    assert [r["case_name"] for r in check["regressions"]] == ["one", "two"]


def test_the_pytest_plugin_never_xfails_a_case_not_run(tmp_path: Path) -> None:
    """The plugin's ``errored`` entry is an xfail expecting the case's error: a case
    not run (its implementation could not be imported) once raised that same error and
    was xfailed, and the session passed."""
    from pytest_plugin.test_plugin import pytest_session

    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "broken.py").write_text('raise ImportError("gone")\n', encoding="utf-8")
    (tmp_path / "known.toml").write_text(ERRORED_ENTRIES, encoding="utf-8")
    done = pytest_session(
        "evals.toml", "--cer-impl", "broken:evaluate", "--cer-baseline", "known.toml", cwd=tmp_path
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "xfailed" not in done.stdout
    assert "2 errors" in done.stdout


def test_a_distributions_metadata_never_stalls_the_supervisor(tmp_path: Path) -> None:
    """A matrix names a module's distribution from the metadata beside it, files of
    the implementation's: a ``RECORD`` that is a FIFO once blocked the supervisor for
    good (SIGTERM too). Only regular files of bounded size are read now (so a link to
    ``/dev/zero`` is not read either)."""
    import os
    import threading

    from cer.engine.python.distribution import distribution_of

    (tmp_path / "calc.py").write_text(WRONG_ON_TWO, encoding="utf-8")
    info = tmp_path / "calc-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: calc\nVersion: 1.0\n")
    os.mkfifo(info / "RECORD")
    found: list[object] = []
    looking = threading.Thread(
        target=lambda: found.append(distribution_of("calc:evaluate", [str(tmp_path)])),
        daemon=True,
    )
    looking.start()
    looking.join(20)
    stalled = looking.is_alive()
    if stalled:
        with open(info / "RECORD", "w"):  # let the blocked reader go before failing
            pass
    assert not stalled, "the supervisor blocked reading the distribution's RECORD"
    assert found == [None]


RUN_APART = """\
commonsformat_evals = "0.2"
target = "calc"

[[cases]]
name = "timed"
category = "functional"
input = { value = 1 }
expect = { value = 1, elapsed_ms_max = 1000 }

[[adversarial]]
name = "crashes"
category = "failure-mode"
input = { value = 1 }
expect = { crashed = true }
"""


def test_cases_run_apart_are_not_run_too_when_the_import_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A case with a time bound (run serially) and one expecting a crash (run alone)
    once took the load failure's note as their reason, without ``not run:``: an entry
    listing them as errored took them for its known failure, and the run exited 0."""
    (tmp_path / "evals.toml").write_text(RUN_APART, encoding="utf-8")
    (tmp_path / "broken.py").write_text('raise ImportError("gone")\n', encoding="utf-8")
    (tmp_path / "known.toml").write_text(
        '[[known]]\ncase = "*"\nstatus = "errored"\nreason = "slow and crashing"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    args = ["run", "evals.toml", "--impl", "broken:evaluate", "--baseline", "known.toml"]
    code = main([*args, "--format", "json", "--no-history"])
    document = json.loads(capsys.readouterr().out)
    assert [r["reason"].startswith("not run: ") for r in document["results"]] == [True, True]
    assert document["baseline"]["known_failures"] == []
    assert code == ExitCode.FAILED
