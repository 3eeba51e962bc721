"""The session of lanes, as pure state: one implementation is a session with one lane,
and only the rendering tells the two apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from cer.engine.options import RunOptions
from cer.model import RunResult, Status, Suite
from cer.suite.selection import Selection
from cer.tui.state.session import Failure, Session

from .helpers import make_case, make_suite, result_for

CASES = (make_case("adds", 1), make_case("divides", 2), make_case("parses", 3))
SUITE = make_suite(CASES)
REF = RunOptions(impl="calc_ref:evaluate")
SLOPPY = RunOptions(impl="calc_sloppy:evaluate")
TOOL = RunOptions(impl="./calc", kind="command")


def run_of(options: RunOptions, statuses: dict[str, Status], suite: Suite = SUITE) -> RunResult:
    return RunResult(
        run_id=f"run-{options.impl}",
        target_module="calc",
        implementation_id=options.impl,
        started_at_ms=1_000,
        completed_at_ms=1_250,
        results=tuple(result_for(case, statuses[case.name]) for case in suite.cases),
        implementation=options.impl,
    )


def cycle(session: Session, *runs: RunResult, trigger: str = "first run") -> None:
    """One cycle as the app drives it: begin, load, each lane finishes, the cycle ends."""
    session.begin(trigger)
    session.load(SUITE, Selection())
    for lane, run in zip(session.lanes, runs, strict=True):
        lane.finish(run, session.suite)
    session.cycle_finished(len(runs))


ALL_PASS = {"adds": Status.PASS, "divides": Status.PASS, "parses": Status.PASS}
ONE_FAILS = {"adds": Status.PASS, "divides": Status.FAIL, "parses": Status.PASS}


def test_one_implementation_is_a_session_with_one_lane() -> None:
    session = Session((REF,), ("calc_ref",))
    assert [lane.label for lane in session.lanes] == ["calc_ref"]
    assert not session.several
    assert session.board is session.lanes[0].board and session.board.peers == ()
    cycle(session, run_of(REF, ONE_FAILS))
    assert session.runs_started == session.runs_finished == 1
    header = session.header("watching 2 paths")
    assert (header.target, header.implementation) == ("calc ^1.0", "calc_ref:evaluate")
    summary = session.summary()
    assert (summary.counts.passed, summary.counts.failed, summary.elapsed_ms) == (2, 1, 250)
    assert summary.lanes == ()  # the one-lane bar: plain counts
    assert session.lanes[0].coverage_input is not None


def test_several_lanes_share_the_first_boards_filters_and_render_side_by_side() -> None:
    session = Session((REF, SLOPPY), ("ref", "sloppy"))
    assert session.several and session.board.peers == (session.lanes[1].board,)
    cycle(session, run_of(REF, ALL_PASS), run_of(SLOPPY, ONE_FAILS))
    assert session.board.failed_names() == frozenset({"divides"})
    assert session.header("").implementation == "2 implementations: ref, sloppy"
    summary = session.summary()
    assert [(lane.label, lane.counts.failed) for lane in summary.lanes] == [
        ("ref", 0),
        ("sloppy", 1),
    ]
    rows = session.lane_rows("divides")
    assert [(row.label, row.row.status) for row in rows] == [
        ("ref", Status.PASS),
        ("sloppy", Status.FAIL),
    ]
    assert session.lane_rows("no-such-case") == ()
    runs = session.matrix_runs()
    assert [len(run.results) for run in runs] == [3, 3]


def test_a_command_that_cannot_start_is_named_for_what_it_is_and_said_once() -> None:
    harness = RunOptions(impl="python3 harness.py", kind="command")
    session = Session((harness,), ("harness",))
    cause = (
        "the harness could not start under the sandbox: ~/.pyenv/libexec/pyenv: permission "
        "denied (allow it with --sandbox-read ~/.pyenv/libexec/pyenv, or run with --sandbox off)"
    )
    stderr = "/root/.pyenv/shims/python3: line 12: /root/.pyenv/libexec/pyenv: Permission denied"
    session.lanes[0].import_failure = Failure(cause, stderr)
    title, body = session.import_banner() or ("", "")
    assert title == cause[0].upper() + cause[1:]
    assert "does not import" not in title
    assert body == stderr  # the evidence, not the cause a second time
    session.lanes[0].import_failure = Failure(cause, "")
    assert session.import_banner() == (cause[0].upper() + cause[1:], "")


def test_a_cycle_with_no_finished_run_does_not_count() -> None:
    session = Session((REF,), ("calc_ref",))
    session.begin("first run")
    session.load(SUITE, Selection())
    session.crashed(0, Failure("boom", "Traceback ..."))
    assert not session.cycle_finished(0)
    assert session.runs_finished == 0 and not session.board.running
    assert session.crash_title(0, "boom") == "The runner failed: boom"


def test_import_banners_name_the_lanes_that_did_not_load() -> None:
    one = Session((REF,), ("calc_ref",))
    assert one.import_banner() is None
    one.lanes[0].import_failure = Failure("ModuleNotFoundError: calc_ref", "Traceback ...")
    assert one.import_banner() == (
        "The Python implementation calc_ref:evaluate could not be loaded: "
        "ModuleNotFoundError: calc_ref",
        "Traceback ...",
    )
    # The traceback ends with the error the title says: the body leaves it out.
    trace = (
        'Traceback (most recent call last):\n  File "calc_ref.py", line 1\n'
        "ModuleNotFoundError: calc_ref\n"
    )
    one.lanes[0].import_failure = Failure("ModuleNotFoundError: calc_ref", trace)
    title, body = one.import_banner() or ("", "")
    assert (title + body).count("ModuleNotFoundError: calc_ref") == 1
    assert body.endswith('File "calc_ref.py", line 1')
    one.loaded(0, "calc_ref@1", ["b.py", "a.py"])
    assert one.import_banner() is None and one.lanes[0].sources == ("a.py", "b.py")

    two = Session((REF, SLOPPY), ("ref", "sloppy"))
    two.lanes[1].import_failure = Failure("no module", "")
    title, body = two.import_banner() or ("", "")
    assert title == "The implementation sloppy (calc_sloppy:evaluate) does not load: no module"
    assert body == ""  # the cause is in the title, once
    two.lanes[1].import_failure = Failure("no module", "Traceback ...\nno module")
    assert two.import_banner() == (title, "── sloppy ──\nTraceback ...")
    two.lanes[0].import_failure = Failure("also", "trace")
    title, _ = two.import_banner() or ("", "")
    assert title == "2 implementations do not load: ref, sloppy"
    assert two.crash_title(1, "boom") == "The runner failed on sloppy: boom"


def test_announcements_tell_what_changed_since_the_last_cycle() -> None:
    session = Session((REF,), ("calc_ref",))
    cycle(session, run_of(REF, ALL_PASS))
    assert session.announcement() is None  # nothing to compare with yet
    cycle(session, run_of(REF, ALL_PASS))
    assert session.announcement() is None  # the same counts, nothing fixed or regressed
    cycle(session, run_of(REF, ONE_FAILS))
    toast = session.announcement()
    assert toast is not None
    assert (toast.title, toast.severity) == ("Run finished", "warning")
    assert toast.message == "−1 regressed   ✔ 2  ✘ 1  ‼ 0  ○ 0"

    two = Session((REF, SLOPPY), ("ref", "sloppy"))
    cycle(two, run_of(REF, ALL_PASS), run_of(SLOPPY, ONE_FAILS))
    assert two.announcement() is None
    cycle(two, run_of(REF, ALL_PASS), run_of(SLOPPY, ALL_PASS))
    toast = two.announcement()
    assert toast is not None
    assert (toast.title, toast.severity) == ("Runs finished", "information")
    assert toast.message == "+1 fixed   ref ✔ 3   sloppy ✔ 3"


def test_watching_falls_back_to_import_folders_only_for_python_lanes_not_loaded() -> None:
    assert Session((REF,), ("calc_ref",)).needs_fallback() is None  # the plan's own rule
    session = Session((REF, TOOL), ("ref", "tool"))
    assert session.needs_fallback() is True
    session.loaded(0, "ref@1", ["calc_ref.py"])
    assert session.needs_fallback() is False  # the command lane reports its own files
    session.loaded(1, "tool@1", ["calc", "calc_ref.py"])
    assert session.sources() == ("calc", "calc_ref.py")


def test_a_session_refuses_labels_that_do_not_match() -> None:
    with pytest.raises(ValueError, match="2 labels for 1 implementations"):
        Session((REF,), ("a", "b"))
    with pytest.raises(ValueError, match="at least one"):
        Session((), ())


def test_a_changed_suite_rebuilds_every_lane(tmp_path: Path) -> None:
    session = Session((REF, SLOPPY), ("ref", "sloppy"))
    assert session.load(SUITE, Selection()) is True
    assert session.load(SUITE, Selection()) is False
    fewer = make_suite(CASES[:2], tmp_path / "evals.toml")
    assert session.load(fewer, Selection()) is True
    assert [len(lane.board.rows) for lane in session.lanes] == [2, 2]


def test_the_header_names_the_timeout_every_lane_runs_with() -> None:
    session = Session((RunOptions(impl="calc_ref:evaluate", timeout=3.5),), ("calc_ref",))
    assert session.header("").timeout == 3.5


def test_a_partial_run_says_so_with_its_own_counts() -> None:
    session = Session((REF,), ("calc_ref",))
    cycle(session, run_of(REF, ONE_FAILS))
    assert session.summary().partial is None  # the whole suite ran
    assert session.announcement() is None  # the first run: nothing to compare
    session.begin("rerun: only 'divides'")
    session.load(SUITE, Selection(names=frozenset({"divides"})))
    partial = session.summary().partial
    assert partial is not None and (partial.ran, partial.rows, partial.earlier) == (1, 3, 2)
    assert partial.counts.as_tuple() == (0, 0, 0, 0)  # running: its old result is not counted
    fixed = {"adds": Status.SKIPPED, "divides": Status.PASS, "parses": Status.SKIPPED}
    session.lanes[0].finish(run_of(REF, fixed), session.suite)
    summary = session.summary()
    assert summary.partial is not None
    assert (summary.partial.counts.passed, summary.partial.counts.failed) == (1, 0)
    # The list's totals keep the earlier results of the cases that did not run.
    assert (summary.counts.passed, summary.counts.failed) == (3, 0)
    toast = session.announcement()
    assert toast is not None and toast.title == "Run finished (1 of 3 cases)"
    cycle(session, run_of(REF, ALL_PASS))
    assert session.summary().partial is None
