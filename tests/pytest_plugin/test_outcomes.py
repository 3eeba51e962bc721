"""The outcome cer's verdict gives a pytest item, and what a report claims: the table
the plugin holds pytest's reports against (docs/pytest.md, "When a report is not cer's
verdict"). In-process: the sessions themselves are in tests/hostile/test_untrusted_pytest.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cer.model import CaseResult, Status
from cer.pytest_plugin.outcomes import (
    Logged,
    Pinned,
    expected_outcome,
    item_outcome,
    mismatches_of,
    phase_outcome,
)
from cer.results.baseline import NOT_RUN


def result(status: Status, reason: str | None = "why") -> CaseResult:
    return CaseResult("c", "functional", "functional", status, reason, position=1)


@pytest.mark.parametrize(
    ("status", "listed", "outcome"),
    [
        (Status.PASS, None, "passed"),
        (Status.FAIL, None, "failed"),
        (Status.ERRORED, None, "error"),
        (Status.SKIPPED, None, "skipped"),
        (Status.PASS, "fail", "failed"),  # XPASS(strict): a stale entry
        (Status.FAIL, "fail", "xfailed"),
        (Status.FAIL, "errored", "failed"),
        (Status.ERRORED, "errored", "xfailed"),
        (Status.ERRORED, "fail", "error"),
        (Status.SKIPPED, "fail", "skipped"),
    ],
)
def test_the_verdict_gives_one_outcome(status: Status, listed: str | None, outcome: str) -> None:
    assert expected_outcome(result(status), None, listed) == outcome


def test_a_case_cer_did_not_run_can_only_be_an_error() -> None:
    assert expected_outcome(None, None, None) == "error"
    assert expected_outcome(result(Status.PASS), "the run could not start", None) == "error"
    never = result(Status.ERRORED, f"{NOT_RUN}the worker process was lost")
    assert expected_outcome(never, None, "errored") == "error"


def report(when: str, outcome: str, **extra: object) -> SimpleNamespace:
    return SimpleNamespace(when=when, outcome=outcome, nodeid="s.toml::c", **extra)


def test_reports_add_up_as_the_terminal_counts_them() -> None:
    assert phase_outcome(report("setup", "passed")) == ""
    assert phase_outcome(report("setup", "failed")) == "error"
    assert phase_outcome(report("call", "skipped", wasxfail="known")) == "xfailed"
    assert phase_outcome(report("call", "passed", wasxfail="known")) == "xpassed"
    assert item_outcome({"setup": "", "call": "failed"}) == "failed"
    assert item_outcome({"setup": "skipped"}) == "skipped"
    assert item_outcome({"setup": ""}) == "no call report"


def test_a_report_changed_after_it_was_logged_is_caught() -> None:
    call = report("call", "failed")
    logged = Logged({"setup": "", "call": "failed"}, {"setup": report("setup", "passed")})
    logged.reports["call"] = call
    assert mismatches_of("s.toml::c", "failed", logged) == []
    call.outcome = "passed"
    (found,) = mismatches_of("s.toml::c", "failed", logged)
    assert (found.claimed, found.where) == ("passed", "as it is now")
    (shown,) = mismatches_of("s.toml::c", "failed", None, {"setup": "", "call": "passed"})
    assert shown.where == "in the terminal"


def test_a_replaced_function_is_named() -> None:
    class Owner:
        def run(self) -> str:
            return "cer"

    pinned = Pinned.of([Owner])
    assert pinned.replaced() == ()
    Owner.run = lambda self: "a conftest"  # type: ignore[method-assign]
    assert pinned.replaced() == ("test_a_replaced_function_is_named.<locals>.Owner.run",)
