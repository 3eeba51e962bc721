"""The detail panes are declared once, in the pane table: a pane registered there alone
is a tab of the running app, shows its part of the case's details, and is in tab's
cycle and its help; nothing else in the app names the panes."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import TabPane

from cer.engine.options import RunOptions
from cer.tui import keys
from cer.tui.app import create_app
from cer.tui.state import details
from cer.tui.state.details import Details, Pane
from cer.tui.widgets.detail_panes import DetailPanes
from cer.tui.widgets.text_pane import TextPane

from .helpers import FakeRunner, fixed_loader, run_screen, settle, triage_outcome, triage_suite

pytestmark = pytest.mark.anyio

SIZE = (120, 30)


def _notes(shown: Details) -> Text:
    """A pane's part made from the details: the case's name, as the Case pane heads it."""
    return Text(f"notes on {shown.case.plain.split()[0]}")


def _shown(pane: TextPane) -> str:
    content = pane.content
    assert isinstance(content, Text)
    return content.plain


async def test_a_pane_registered_in_the_table_is_a_tab_that_shows_its_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(details, "PANES", (*details.PANES, Pane("notes", "Notes", "text", _notes)))
    app = create_app(
        Path("evals.toml"),
        RunOptions(impl="calc:evaluate"),
        run=FakeRunner(triage_outcome),
        load=fixed_loader(triage_suite()),
        watch=False,
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(app)
        panes = app.query_one(DetailPanes)
        assert [pane.name for pane in panes.panes][-1] == "notes"
        assert app.query_one("#notes", TabPane).parent is not None
        tabs = [str(tab.label) for tab in panes.query("ContentTab").results()]
        assert tabs == [pane.title for pane in details.PANES] and tabs[-1] == "Notes"
        first = run_screen(app).case_list.cursor_name
        assert first is not None
        assert _shown(app.query_one("#notes-pane", TextPane)) == f"notes on {first}"

        # tab cycles through it, after the others, and back to the first.
        names = [pane.name for pane in details.PANES]
        for expected in (*names[1:], names[0]):
            await pilot.press("tab")
            assert panes.active == expected

        # Another case: the registered pane follows the selection like the others.
        await pilot.press("j")
        await settle(app)
        second = run_screen(app).case_list.cursor_name
        assert second not in (None, first)
        assert _shown(app.query_one("#notes-pane", TextPane)) == f"notes on {second}"


def test_tabs_help_names_every_pane_of_the_table() -> None:
    cycle = next(key for key in keys.APP_KEYS if key.action == "cycle_pane")
    assert cycle.help.endswith(", ".join(pane.title for pane in details.PANES))


def test_every_pane_of_the_table_has_a_part_of_the_details() -> None:
    fields = set(Details.__dataclass_fields__)
    assert len({pane.name for pane in details.PANES}) == len(details.PANES)
    assert {pane.name for pane in details.PANES} == fields


def test_a_case_of_the_first_run_not_run_yet_claims_no_previous_run() -> None:
    from cer.suite.selection import Selection
    from cer.tui.state.board import Board
    from cer.tui.state.styles import DetailStyles

    suite = triage_suite()
    board = Board()
    board.set_suite(suite)
    board.begin_run(Selection())
    row = board.rows[0]
    assert row.stale and row.status is None
    reason = details.render_reason(row, DetailStyles()).plain
    assert "not run yet" in reason
    assert "previous run" not in reason
