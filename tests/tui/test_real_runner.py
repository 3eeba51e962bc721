"""End-to-end pilot tests with the real runner on the bundled calc example.

The example is copied to a temporary folder, so that a test can edit the
implementation on disk the way a user saves a fix.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from cer.engine.options import RunOptions
from cer.history.database import History
from cer.model import Status
from cer.suite.selection import Selection
from cer.tui.app import create_app
from cer.tui.screens.matrix import MatrixScreen
from cer.tui.widgets.diff_pane import DiffPane
from cer.tui.widgets.matrix_table import MatrixTable
from cer.tui.widgets.text_pane import TextPane

from .helpers import run_screen, screen_text, settle, wait_until

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calc"
SIZE = (140, 36)
SLOPPY_DIVIDE = """        if isinstance(a, int) and isinstance(b, int) and a % b == 0:
            return a // b
"""

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (EXAMPLE / "evals.toml").is_file(), reason="the calc example is not there"
    ),
]


@pytest.fixture
def calc(tmp_path: Path) -> Path:
    folder = tmp_path / "calc"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", ".cer"))
    return folder


@pytest.fixture(autouse=True)
def _forget_calc_modules() -> None:
    """The runner imports the example in its own processes; keep this one clean."""
    for name in [n for n in sys.modules if n.startswith("calc_")]:
        del sys.modules[name]


def division_options(impl: str) -> RunOptions:
    return RunOptions(impl=impl, selection=Selection(substrings=("division",)), timeout=20)


async def test_reference_passes_everything(calc: Path) -> None:
    app = create_app(calc / "evals.toml", RunOptions(impl="calc_ref:evaluate"), watch=False)
    async with app.run_test(size=SIZE):
        await settle(app)
        counts = app.session.board.counts
        assert counts.failed == counts.errored == 0
        assert counts.passed == len(app.session.board.rows) > 50
        assert app.session.board.last_run is not None
        await wait_until(lambda: "calc_ref:evaluate" in screen_text(app))


async def test_saving_a_fix_turns_rows_green(calc: Path) -> None:
    app = create_app(calc / "evals.toml", division_options("calc_sloppy:evaluate"), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        failing = {row.name for row in app.session.board.rows if row.status is Status.FAIL}
        assert "exact-division-is-still-float" in failing
        # The implementation's own files are watched once the runner reports them.
        sloppy = (calc / "calc_sloppy.py").resolve()
        await wait_until(
            lambda: app.control.plan is not None and sloppy in app.control.plan.sources
        )
        assert run_screen(app).case_list.select_name("exact-division-is-still-float")
        await settle(app)
        assert "value" in str(app.query_one("#reason-pane", TextPane).content)

        source = sloppy.read_text()
        assert SLOPPY_DIVIDE in source
        sloppy.write_text(source.replace(SLOPPY_DIVIDE, ""))
        await wait_until(lambda: app.session.runs_finished >= 2, timeout=30)
        await settle(app, runs=2)
        row = app.session.board.row("exact-division-is-still-float")
        assert row is not None and row.status is Status.PASS
        assert app.session.board.counts.fixed >= 1
        assert run_screen(app).case_list.cursor_name == "exact-division-is-still-float"
        assert "calc_sloppy.py changed" in app.session.trigger
        await pilot.press("y")
        assert app.clipboard.endswith("--case exact-division-is-still-float")


async def test_import_failure_of_real_implementation(calc: Path) -> None:
    broken = calc / "calc_broken.py"
    broken.write_text("import no_such_module_here\n")
    app = create_app(calc / "evals.toml", division_options("calc_broken:evaluate"), watch=False)
    async with app.run_test(size=SIZE):
        await settle(app)
        assert run_screen(app).banner.kind == "import-error"
        assert "no_such_module_here" in run_screen(app).banner.body
        selected = [row for row in app.session.board.rows if "division" in row.name]
        assert selected and all(row.status is Status.ERRORED for row in selected)


async def test_real_runs_are_recorded_with_coverage(calc: Path) -> None:
    """The real runner end to end: the run lands in the history with the runner's own
    implementation id and suite hash, and the Coverage pane judges the example's
    commonsformat.md by it."""
    history = calc / ".cer" / "history.sqlite"
    app = create_app(
        calc / "evals.toml",
        division_options("calc_sloppy:evaluate"),
        watch=False,
        history=history,
    )
    async with app.run_test(size=SIZE):
        await settle(app)
        await wait_until(lambda: app.control.runs_recorded == 1)
        run = app.session.board.last_run
        assert run is not None
        with History.open(history, create=False) as opened:
            (record,) = opened.runs(None)
            failed = opened.latest_failed(suite_path=calc / "evals.toml")
        assert record.run_id == run.run_id
        assert record.implementation_id == run.implementation_id
        assert record.suite_hash == app.session.suite.content_hash  # type: ignore[union-attr]
        assert failed is not None and "exact-division-is-still-float" in failed.names
        await wait_until(lambda: app.session.lanes[0].coverage.coverage is not None)
        coverage = app.session.lanes[0].coverage.coverage
        assert coverage is not None and coverage.total > 0
        verdict = {item.name: item.verified for item in coverage.constraints}
        assert verdict["true-division-float"] is False


SLOPPY_DISAGREEMENTS = [
    "division-chain-left-to-right",
    "mixed-precedence-chain",
    "rejects-power-tower",
    "exact-division-is-still-float",
    "exact-division-chain-is-float",
    "power-is-right-associative",
    "unary-minus-looser-than-power",
    "large-exact-division-is-float",
]
"""Where calc_sloppy observes otherwise than calc_ref, in declared order (docs/matrix.md)."""


async def test_two_real_implementations_side_by_side(calc: Path) -> None:
    """calc_ref and calc_sloppy with the real runner: both run, each run is recorded on
    its own, the matrix lists their disagreements, and saving a fix to calc_sloppy reruns
    both and leaves fewer."""
    history = calc / ".cer" / "history.sqlite"
    ref = RunOptions(impl="calc_ref:evaluate", timeout=20)
    sloppy = RunOptions(impl="calc_sloppy:evaluate", timeout=20)
    app = create_app(
        calc / "evals.toml", ref, implementations=(ref, sloppy), watch=True, history=history
    )
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(lambda: app.session.runs_finished >= 1, timeout=60)
        await settle(app)
        await wait_until(lambda: app.control.runs_recorded == 2)
        matrix = app.session.matrix
        assert matrix is not None and matrix.labels == ("calc_ref", "calc_sloppy")
        assert [row.case_name for row in matrix.disagreements] == SLOPPY_DISAGREEMENTS
        totals = matrix.totals
        assert (totals["calc_ref"].passed, totals["calc_ref"].failed) == (70, 0)
        assert (totals["calc_sloppy"].passed, totals["calc_sloppy"].failed) == (62, 8)
        text = screen_text(app)
        assert "calc_ref ✔ 70  │  calc_sloppy ✔ 62 ✘ 8  │  ≠ 8 differ" in text
        with History.open(history, create=False) as opened:
            ids = sorted(record.implementation_id for record in opened.runs(None))
        assert [i.partition("@")[0] for i in ids] == ["calc_ref:evaluate", "calc_sloppy:evaluate"]
        # Each implementation's own files are watched.
        sources = {(calc / name).resolve() for name in ("calc_ref.py", "calc_sloppy.py")}
        await wait_until(
            lambda: app.control.plan is not None and sources <= app.control.plan.sources
        )

        await pilot.press("m")
        assert isinstance(app.screen, MatrixScreen)
        assert app.screen.query_one(MatrixTable).cursor_name == SLOPPY_DISAGREEMENTS[0]
        await pilot.press("enter")
        assert run_screen(app).case_list.cursor_name == SLOPPY_DISAGREEMENTS[0]
        await settle(app)
        diff = app.query_one("#diff-pane", DiffPane).plain.splitlines()
        assert diff[:4] == [
            "≠ calc_ref ✔ pass  against  calc_sloppy ✘ fail",
            "▸ value",
            "  calc_ref: float 2.0",
            "  calc_sloppy: int 2",
        ]

        source = (calc / "calc_sloppy.py").read_text()
        assert SLOPPY_DIVIDE in source
        (calc / "calc_sloppy.py").write_text(source.replace(SLOPPY_DIVIDE, ""))
        await wait_until(lambda: app.session.runs_finished >= 2, timeout=60)
        await settle(app, runs=2)
        assert "calc_sloppy.py changed" in app.session.trigger
        await wait_until(lambda: app.control.runs_recorded == 4)
        matrix = app.session.matrix
        assert matrix is not None
        assert [row.case_name for row in matrix.disagreements] == [
            "rejects-power-tower",
            "power-is-right-associative",
            "unary-minus-looser-than-power",
        ]
        assert app.session.lanes[1].board.counts.fixed == 5
