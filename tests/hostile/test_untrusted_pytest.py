"""What the implementation says is only data in the pytest plugin too: an implementation
whose import fails with a hostile message (the load failure every case reports, and the
note of the session's summary), and one that returns, raises and prints every class of
:mod:`hostile_text`. pytest runs in a subprocess, as a user runs it; nothing it prints
may hold a raw control or bidi character, and nothing may crash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hostile_text import CORPUS, assert_inert, implementation, suite_lines
from pytest_scaffold import DOUBLING_IMPL, DOUBLING_SUITE, pytest_env

from support import NO_TEST_PLUGINS

pytestmark = pytest.mark.slow

SHOWN = {k: v for k, v in CORPUS.items() if k != "long-line"}

IMPL = implementation(SHOWN)

BROKEN = f"""
raise ImportError({"".join(SHOWN.values())!a})
"""


def _suite(folder: Path) -> Path:
    lines = suite_lines(SHOWN)
    path = folder / "evals.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    (folder / "hostile_pytest_impl.py").write_text(IMPL, encoding="ascii")
    (folder / "broken_pytest_impl.py").write_text(BROKEN, encoding="ascii")
    return path


def _pytest(folder: Path, impl: str) -> subprocess.CompletedProcess[bytes]:
    env = pytest_env()
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *NO_TEST_PLUGINS,
            "-p",
            "no:cacheprovider",
            "-rA",
            "evals.toml",
            "--cer-impl",
            impl,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        timeout=300,
    )


@pytest.mark.parametrize("impl", ["broken_pytest_impl:f", "hostile_pytest_impl:f"])
def test_the_plugin_shows_what_the_implementation_said_as_data(tmp_path: Path, impl: str) -> None:
    _suite(tmp_path)
    done = _pytest(tmp_path, impl)
    out = done.stdout.decode("utf-8")
    err = done.stderr.decode("utf-8")
    assert done.returncode == 1, out + err
    assert "Traceback" not in err, err
    assert_inert(out, "pytest stdout")
    assert_inert(err, "pytest stderr")
    if impl.startswith("broken"):
        assert "could not be loaded" in out
        assert "note: the Python implementation broken_pytest_impl:f could not be loaded" in out
    else:
        assert f"{len(SHOWN)} failed, {len(SHOWN)} errors" in out
        assert "[/nope]" in out


# --- a conftest.py that rewrites what pytest reports ---------------------------------------

CONFTESTS = {
    "makereport-wrapper": """
import pytest

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    report.longrepr = None
    return report
""",
    "logreport-after": """
def pytest_runtest_logreport(report):
    report.outcome = "passed"
    report.longrepr = None
""",
    "logreport-first": """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    report.outcome = "passed"
    report.longrepr = None
""",
    "teststatus": """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report, config):
    if report.when == "call" or report.failed:
        return "passed", ".", "PASSED"
""",
    "skip-the-judged": """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name != "good":
            item.add_marker(pytest.mark.skip(reason="not today"))
""",
    "patched-plugin": """
import cer.pytest_plugin as plugin

plugin.CaseItem.setup = lambda self: None
plugin.CaseItem.runtest = lambda self: None
""",
    "patched-judge": """
import cer.judge.compare as compare

compare.compare = lambda *args, **kwargs: []
""",
    "exit-status": """
import pytest

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    report.longrepr = None
    return report

def pytest_sessionstart(session):
    session.config.stash_session = session

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    session.exitstatus = 0

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    config.stash_session.exitstatus = 0
""",
}


def _conftest_session(
    folder: Path, conftest: str | None, *args: str
) -> subprocess.CompletedProcess[str]:
    (folder / "evals.toml").write_text(DOUBLING_SUITE, encoding="utf-8")
    (folder / "doubling_impl.py").write_text(DOUBLING_IMPL, encoding="utf-8")
    if conftest is not None:
        (folder / "conftest.py").write_text(conftest, encoding="utf-8")
    env = pytest_env()
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *NO_TEST_PLUGINS,
            "-p",
            "no:cacheprovider",
            "evals.toml",
            "--cer-impl",
            "doubling_impl:double",
            "--junitxml=junit.xml",
            *args,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("name", sorted(CONFTESTS))
def test_a_conftest_cannot_turn_cer_verdict_into_a_pass(tmp_path: Path, name: str) -> None:
    done = _conftest_session(tmp_path, CONFTESTS[name])
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "cer: reports overruled" in out, out
    assert "cer's verdict stands and the session fails" in out
    if name == "patched-plugin":
        assert "cer's CaseItem.runtest was replaced at run time" in out
        said = "evals.toml::good: pytest's report says passed (as logged)"
        assert f"{said}, cer's verdict is error" in out
    elif name == "patched-judge":
        assert "cer's cer.judge.compare.compare was replaced at run time" in out
        return
    else:
        assert "evals.toml::bad: pytest's report says" in out
        assert "cer's verdict is failed" in out
    # the cer section keeps cer's own summary whatever the reports say
    if name != "patched-plugin":
        assert "3 cases: 1 passed, 1 failed, 1 errored" in out


LATE_CONFTEST = """
import pytest

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    report.longrepr = None
    return report

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    yield
    session.exitstatus = 0

@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    pass
"""


def test_a_conftest_beside_the_suite_loaded_after_the_plugin_is_caught(tmp_path: Path) -> None:
    """A conftest.py in the suite's folder is registered during collection, after the
    plugin, so its hooks wrap the plugin's: its lowered exit code still does not hold."""
    spec = tmp_path / "spec"
    spec.mkdir()
    (spec / "conftest.py").write_text(LATE_CONFTEST, encoding="utf-8")
    (spec / "evals.toml").write_text(DOUBLING_SUITE, encoding="utf-8")
    (tmp_path / "doubling_impl.py").write_text(DOUBLING_IMPL, encoding="utf-8")
    env = pytest_env(no_color=False)
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", *NO_TEST_PLUGINS, "-p", "no:cacheprovider",
            "spec/evals.toml", "--cer-impl", "doubling_impl:double", "--cer-path", ".",
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "spec/evals.toml::bad: pytest's report says passed" in out


IN_THE_WORKERS = """
import os

if os.environ.get("PYTEST_XDIST_WORKER"):  # where the controller does not look
    import cer.judge.compare as compare

    compare.unit_of = lambda base: None
"""


@pytest.mark.slow(reason="a pytest session with two xdist workers, each starting pytest")
def test_under_xdist_the_controller_holds_the_reports_against_cer(tmp_path: Path) -> None:
    """The controller holds the workers' reports against the workers' runs, and hears
    of a function a conftest replaced only in the workers."""
    conftest = CONFTESTS["makereport-wrapper"] + IN_THE_WORKERS
    done = _conftest_session(tmp_path, conftest, "-n", "2")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "evals.toml::bad: pytest's report says passed (as logged), cer's verdict is failed" in (
        out
    )
    assert "cer's verdict stands and the session fails" in out
    assert "cer's cer.judge.compare.unit_of in xdist worker gw" in out


def test_junit_shows_the_overruled_report_on_its_item(tmp_path: Path) -> None:
    done = _conftest_session(tmp_path, CONFTESTS["makereport-wrapper"])
    assert done.returncode == 1
    text = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert text.count("<testcase") == 3
    assert text.count("cer's verdict stands") >= 2  # bad and boom, on their own testcase


def test_an_honest_session_is_not_overruled(tmp_path: Path) -> None:
    done = _conftest_session(tmp_path, "import pytest\n")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 failed, 1 passed, 1 error" in out, out
    assert "overruled" not in out
