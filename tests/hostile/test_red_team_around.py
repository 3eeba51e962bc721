"""Attacks on the guarantees around the sandbox: the pytest plugin's hold of pytest's
reports against cer's verdict, the approval of an observation, and the flaky query.
Each test here failed before the fix it stands for."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from pytest_scaffold import DOUBLING_IMPL, DOUBLING_SUITE, ONE_CASE_SUITE, pytest_env, write_draft

from cer.cli.github_action import cer_environment
from cer.model import CaseResult, Status
from cer.review.approve import ApprovalError, approve_draft
from cer.review.observe import proposal_from
from support import NO_TEST_PLUGINS, ROOT

# --- approval ------------------------------------------------------------------------------


def test_the_rejection_cer_proposes_is_still_approved(tmp_path: Path) -> None:
    """cer's own proposal for a rejected input holds ``error_includes``: refusing every
    operator-spelled key refused it too, so no rejection could be approved any more."""
    result = CaseResult(
        "x",
        "functional",
        "functional",
        Status.FAIL,
        "why",
        observation={"rejects": True, "error_type": "ValueError", "error": "empty input"},
    )
    proposal, note = proposal_from(result)
    assert note is None and proposal is not None
    suite_path, name = write_draft(tmp_path, "", dict(proposal))
    approve_draft(suite_path, name, approver="me", use_observed=True)
    written = tomlkit.parse(suite_path.read_text(encoding="utf-8"))
    (case,) = [c for c in written["cases"] if c["name"] == name]
    assert dict(case["expect"]) == {
        "rejects": True,
        "error_type": "ValueError",
        "error_includes": "empty input",
    }


@pytest.mark.parametrize(
    "observed",
    [
        {"rejects": True, "error_includes": ""},  # "" is in every message
        {"rejects": True, "error_includes": "x", "value_max": 3},
        {"rejects": False, "error_includes": "x"},
    ],
)
def test_a_rejection_lookalike_is_still_refused(tmp_path: Path, observed: dict[str, Any]) -> None:
    suite_path, name = write_draft(tmp_path, "", observed)
    before = suite_path.read_text(encoding="utf-8")
    with pytest.raises(ApprovalError, match="is spelled like the operator"):
        approve_draft(suite_path, name, approver="me", use_observed=True)
    assert suite_path.read_text(encoding="utf-8") == before


# --- the pytest plugin ---------------------------------------------------------------------

SESSIONS: dict[str, tuple[str, tuple[str, ...], str]] = {
    # (conftest.py, more arguments, what the overruled section says)
    "count-zeroed": (
        """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    result = yield
    session.testsfailed = 0  # the reports stay honest; the exit code follows the count
    return result
""",
        (),
        "cer's verdict fails cases, yet pytest was to exit 0",
    ),
    "never-reported": (
        """
import pytest

def pytest_collection_modifyitems(items):
    items[:] = [item for item in items if item.name != "boom"]  # gone, not deselected

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if item.name == "bad":
        return True  # "ran": no report at all
""",
        (),
        "evals.toml::bad: pytest's report says nothing (no report), cer's verdict is failed",
    ),
    "code-swapped": (
        """
import cer.judge.compare as compare
import cer.pytest_plugin as plugin

compare.compare.__code__ = (lambda expect, observation: ()).__code__
plugin._OVERRULED = ()  # the exit codes the plugin never lets a failing session keep
""",
        ("-k", "not boom"),
        "cer's cer.judge.compare.compare was replaced at run time\n"
        "cer's cer.pytest_plugin._OVERRULED was replaced at run time",
    ),
    "cleanup-lowers": (
        """
import pytest

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    report.longrepr = None
    return report

def pytest_configure(config):
    # cleanups run last registered first: this one, registered before the plugin's,
    # ran after it
    config.add_cleanup(lambda: setattr(config.cer_session, "exitstatus", 0))

def pytest_sessionstart(session):
    session.config.cer_session = session
""",
        (),
        "evals.toml::bad: pytest's report says passed (as logged), cer's verdict is failed",
    ),
    "plugin-shadowed": (
        """
import pytest

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.outcome = "passed"
    report.longrepr = None
    return report

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    plugin = config.pluginmanager.get_plugin("cer-session")
    shadows = {
        "check_reports": lambda **kwargs: [],
        "enforce": lambda: None,
        "expected": lambda key, ran: "passed",
    }
    for name, value in shadows.items():  # on the object: the class stays as pinned
        try:
            setattr(plugin, name, value)
        except AttributeError:
            pass
""",
        (),
        "evals.toml::bad: pytest's report says passed (as logged), cer's verdict is failed",
    ),
    "stopped-honestly": ("", ("-x",), ""),
}


@pytest.mark.slow(reason="a pytest session each, as a user starts it")
@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_a_conftest_cannot_lower_the_exit_code_around_the_reports(
    tmp_path: Path, name: str
) -> None:
    """Reports left as cer made them, with the count pytest exits by zeroed; items the
    session never reports (dropped from its items without deselecting them, or a
    protocol that runs nothing); a judge whose code was swapped under its name; a
    cleanup that lowers the exit code after the plugin's last check; the plugin's
    checking methods shadowed on its object. Each exited 0 before; a run that stops
    at its first failure (-x) is not overruled."""
    conftest, args, said = SESSIONS[name]
    (tmp_path / "evals.toml").write_text(DOUBLING_SUITE, encoding="utf-8")
    (tmp_path / "doubling_impl.py").write_text(DOUBLING_IMPL, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(conftest, encoding="utf-8")
    env = pytest_env()
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", *NO_TEST_PLUGINS, "-p", "no:cacheprovider",
            "evals.toml", "--cer-impl", "doubling_impl:double", *args,
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    if not said:
        assert "overruled" not in out, out
        return
    assert "cer: reports overruled" in out, out
    for line in said.splitlines():
        assert line.strip() in out, out


# --- the GitHub Action -----------------------------------------------------------------------

# Runs wherever it is imported (the real module is then loaded in its place), and
# says so in a file outside the workspace.
STDLIB_LOOKALIKE = """
import os, sys
with open(os.environ["HIJACK_MARKER"], "a") as marker:
    marker.write(f"{__name__} ran in {sys.argv[0]}\\n")
if __name__ != "sitecustomize":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    del sys.modules[__name__]
    sys.modules[__name__] = __import__(__name__)
"""


def test_the_job_pythonpath_does_not_reach_cer_worker(tmp_path: Path) -> None:
    """A job that sets ``PYTHONPATH: .`` (many do): ``cer run`` is isolated, but its
    worker is started with the environment it was given, before the sandbox, so a
    committed ``json.py`` (which the worker imports) and ``sitecustomize.py`` ran there."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "evals.toml").write_text(ONE_CASE_SUITE, encoding="utf-8")
    (folder / "doubling.py").write_text("def double(x):\n    return x * 3\n", encoding="utf-8")
    for name in ("json.py", "sitecustomize.py"):
        (folder / name).write_text(STDLIB_LOOKALIKE, encoding="utf-8")
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    (line,) = re.findall(r"^\s+run: '(.*cer\.cli\.github_action.*)'$", text, re.MULTILINE)
    marker, output = tmp_path / "hijacked.txt", tmp_path / "output.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CER_", "GITHUB_"))}
    env.update(
        CER_PYTHON=sys.executable,
        CER_SUITE="evals.toml",
        CER_IMPL="doubling:double",
        CER_ARGS="--no-history",
        GITHUB_OUTPUT=str(output),
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        HIJACK_MARKER=str(marker),
        PYTHONPATH=".",
    )
    done = subprocess.run(
        ["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )
    assert not marker.exists(), marker.read_text(encoding="utf-8")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "exit-code=1\n" in output.read_text(encoding="utf-8")


def test_cer_run_gets_no_path_variable_and_no_step_file() -> None:
    job = {
        "PATH": "/usr/bin",
        "HOME": "/home/runner",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": "/w",
        "PYTHONHASHSEED": "0",
        "PYTHONUTF8": "1",
        **{
            key: "/w"
            for key in (
                "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONSTARTUP",
                "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE", "PYTHONSAFEPATH_NOT_A_VARIABLE",
                "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH",
                "GITHUB_STATE",
            )
        },
    }  # fmt: skip
    assert cer_environment(job) == {
        "PATH": "/usr/bin",
        "HOME": "/home/runner",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": "/w",
        "PYTHONHASHSEED": "0",
        "PYTHONUTF8": "1",
    }


def test_cer_packages_are_never_taken_from_the_job_site_packages() -> None:
    """The environment sees the job's site-packages: without ``--ignore-installed``
    pip leaves a package the job already installed (a dependency of cer, or cer
    itself given by version in ``install``) where it is, and cer imports the job's."""
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    installs = re.findall(r"-m pip install ([^\n]*)", text)
    assert len(installs) == 2
    for words in installs:
        assert "--ignore-installed" in words.split(), words
