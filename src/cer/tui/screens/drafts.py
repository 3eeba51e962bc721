"""The drafts screen: review what ``cer derive`` proposed, one draft at a time.

Drafts live in their own section, this screen, and nowhere else: they are never part of
the case list, the totals, the verdict, the exit code or the history's counts. On
opening, every draft that has an input is run against the implementation (in a thread
worker, like any case); a draft without an expectation is run to observe what the
implementation does, and that observation is shown as a proposal.

Keys: ``a`` accept the draft as written; ``o`` accept it with the observed value as its
expectation (asks for confirmation first); ``e`` edit the drafts file in ``$EDITOR`` at
the draft; ``s`` skip to the next draft; ``d`` discard it; ``esc`` back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Static

from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.history.database import History
from cer.history.records import HistoryError
from cer.model import RunResult, Status, Suite
from cer.review.approve import ApprovalError, approve_draft, approver_name, discard_draft
from cer.review.derive import Draft
from cer.review.drafts import DraftsError, drafts_path, load_drafts, set_observed
from cer.review.observe import DraftRun, run_drafts
from cer.suite.loader import SuiteError, load_suite
from cer.text.safetext import for_json
from cer.tui.plain import notify, plain
from cer.tui.state.editor import Launcher, editor_command

__all__ = ["ConfirmScreen", "DraftApproved", "DraftsRan", "DraftsScreen", "draft_line"]

RunFunction = Callable[..., RunResult]
LoadFunction = Callable[[Path], Suite]


@dataclass
class DraftApproved(Message):
    """An approval finished (posted by the worker): ``approver`` is None when the draft
    was not approved, and ``problem`` says why."""

    draft: str
    approver: str | None
    problem: str | None = None
    warning: str | None = None


@dataclass
class DraftsRan(Message):
    """The drafts' runs finished (posted by the worker)."""

    runs: tuple[DraftRun, ...]
    problem: str | None = None


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question; dismisses with True only for ``y``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(plain(self.question), id="question")
            yield Static("y: yes    n: no", id="answers")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


def _inline(value: Any) -> str:
    return for_json(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))


def draft_line(draft: Draft, run: DraftRun | None) -> tuple[str, str, str, str]:
    """The table row of one draft: name, label, constraint, what running it showed."""
    if run is None:
        shown = "…" if draft.input is not None else "needs an input"
    elif run.result is None:
        shown = run.note or "not run"
    elif run.probed:
        shown = f"observed {_inline(run.proposal)}" if run.proposal else f"{run.note}"
    elif run.result.status is Status.PASS:
        shown = "✔ passes"
    else:
        first = next(iter((run.result.reason or "").splitlines()), "")
        shown = f"✘ {run.result.status.value}: {first}"
    return draft.name, draft.standing, draft.constraint, shown


class DraftsScreen(Screen[None]):
    """Drafts of the suite, run against the implementation, with the review keys."""

    DEFAULT_CSS = """
    DraftsScreen { layout: vertical; }
    DraftsScreen #drafts-title { height: 1; padding: 0 1; text-style: bold; }
    DraftsScreen DataTable { height: 1fr; }
    DraftsScreen #draft-detail { height: auto; max-height: 12; padding: 0 1; }
    ConfirmScreen { align: center middle; }
    ConfirmScreen #confirm { width: 70; height: auto; border: round $accent; padding: 1 2; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "accept", "Accept"),
        Binding("o", "accept_observed", "Accept observed"),
        Binding("e", "edit", "Edit"),
        Binding("s", "skip", "Skip"),
        Binding("d", "discard", "Discard"),
        Binding("escape,q", "leave", "Back", key_display="esc"),
        Binding("j", "cursor(1)", "Down", show=False),
        Binding("k", "cursor(-1)", "Up", show=False),
    ]

    def __init__(
        self,
        suite_path: Path,
        options: RunOptions,
        *,
        history: Path | None = None,
        launcher: Launcher | None = None,
        run: RunFunction = run_suite,
        load: LoadFunction = load_suite,
        approver: str | None = None,
    ) -> None:
        super().__init__()
        self.suite_path = Path(suite_path)
        self.options = options
        self.history_path = history
        self._launcher = launcher
        self._run = run
        self._load = load
        self.approver = approver
        self.drafts: tuple[Draft, ...] = ()
        self.runs: dict[str, DraftRun] = {}
        self.problem: str | None = None

    @property
    def drafts_file(self) -> Path:
        return drafts_path(self.suite_path)

    def compose(self) -> ComposeResult:
        yield Static(id="drafts-title")
        yield DataTable(id="drafts-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="draft-detail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("draft", "label", "constraint")
        # Wide from the start: a run's result is wider than the "…" it replaces.
        table.add_column("run", width=60)
        self.reload()

    def action_cursor(self, step: int) -> None:
        """``j``/``k`` move through the drafts as they move through the case list."""
        table = self.query_one(DataTable)
        if step > 0:
            table.action_cursor_down()
        else:
            table.action_cursor_up()

    # -- data -------------------------------------------------------------------------

    def reload(self, *, run: bool = True) -> None:
        """Read the drafts file again, redraw, and run the drafts (in a worker)."""
        try:
            self.drafts = load_drafts(self.drafts_file).drafts
            self.problem = None
        except DraftsError as exc:
            self.drafts, self.problem = (), str(exc)
        self.runs = {k: v for k, v in self.runs.items() if k in {d.name for d in self.drafts}}
        self._redraw()
        if run and self.drafts:
            self._run_drafts(self.drafts)

    @work(thread=True, exclusive=True, group="drafts", exit_on_error=False)
    def _run_drafts(self, drafts: tuple[Draft, ...]) -> None:
        try:
            suite = self._load(self.suite_path)
            found = run_drafts(suite, drafts, self.options, run=self._run)
        except (SuiteError, OSError, ValueError) as exc:
            self.post_message(DraftsRan((), f"the drafts could not be run: {exc}"))
            return
        self.post_message(DraftsRan(found))

    def on_drafts_ran(self, message: DraftsRan) -> None:
        if message.problem is not None:
            notify(self, message.problem, severity="error")
        self.runs.update({run.draft: run for run in message.runs})
        self._redraw()

    # -- drawing ----------------------------------------------------------------------

    def _redraw(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        for draft in self.drafts:
            # Text, never markup: a reason or an observed value is the implementation's.
            line = draft_line(draft, self.runs.get(draft.name))
            cells = (plain(cell, multiline=False) for cell in line)
            table.add_row(*cells, key=draft.name)
        if self.drafts:
            table.move_cursor(row=min(max(row, 0), len(self.drafts) - 1))
        title = f"Drafts of {self.suite_path.name}: {len(self.drafts)}"
        title += " · never counted in totals, verdict or history"
        if self.problem:
            title = f"Drafts: {self.problem}"
        elif not self.drafts:
            title = f"No drafts for {self.suite_path.name}: run `cer derive` to propose some"
        self.query_one("#drafts-title", Static).update(plain(title, multiline=False))
        self._show_detail()

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        draft = self.current
        detail = self.query_one("#draft-detail", Static)
        if draft is None:
            detail.update("")
            return
        text = plain(draft.name, "bold", multiline=False)
        text.append_text(plain(f"  [{draft.standing}] verifies {draft.constraint}\n"))
        text.append_text(plain(f"why: {draft.why}\n"))
        shown_input = _inline(draft.input) if draft.input is not None else "(none)"
        text.append_text(plain(f"input: {shown_input}\n"))
        text.append_text(plain(f"expect: {_inline(draft.expect) if draft.expect else '(none)'}\n"))
        run = self.runs.get(draft.name)
        proposal = run.proposal if run is not None else draft.observed
        if proposal:
            text.append_text(plain(f"observed (a proposal, never checked): {_inline(proposal)}\n"))
        else:
            note = run.note if run is not None else draft.observed_note
            if note:
                text.append_text(plain(f"nothing observed: {note}\n"))
        detail.update(text)

    @property
    def current(self) -> Draft | None:
        table = self.query_one(DataTable)
        if not self.drafts or table.cursor_row < 0 or table.cursor_row >= len(self.drafts):
            return None
        return self.drafts[table.cursor_row]

    # -- actions ----------------------------------------------------------------------

    def action_leave(self) -> None:
        self.dismiss(None)

    def action_skip(self) -> None:
        table = self.query_one(DataTable)
        if self.drafts:
            table.move_cursor(row=(table.cursor_row + 1) % len(self.drafts))

    def action_accept(self) -> None:
        draft = self.current
        if draft is not None:
            self._approve(draft, use_observed=False)

    def action_accept_observed(self) -> None:
        draft = self.current
        if draft is None:
            return
        run = self.runs.get(draft.name)
        proposal = run.proposal if run is not None and run.proposal else draft.observed
        if not proposal:
            notify(self, f"{draft.name}: nothing observed to accept", severity="warning")
            return
        question = (
            f"Take what the implementation did as the expectation of {draft.name}?\n"
            f"expect = {_inline(proposal)}\n"
            "It will be checked against every implementation from now on."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._approve(draft, use_observed=True, proposal=proposal)

        self.app.push_screen(ConfirmScreen(question), answered)

    def _approve(self, draft: Draft, *, use_observed: bool, proposal: Any | None = None) -> None:
        """Approve in a thread worker: asking git who approves, rewriting the suite and
        recording the event all touch the disk, which the event loop never waits on."""
        self._approving(draft, use_observed, proposal)

    @work(thread=True, group="approve", exit_on_error=False)
    def _approving(self, draft: Draft, use_observed: bool, proposal: Any | None) -> None:
        try:
            if use_observed and proposal is not None and proposal != draft.observed:
                # The confirmed observation came from this screen's run: put it on file
                # first, so that what is approved is what the person saw and confirmed.
                taken = replace(
                    draft, observed=proposal, observed_from=self.options.impl, observed_note=None
                )
                set_observed(self.drafts_file, {draft.name: taken})
            who = approver_name(self.approver, cwd=self.suite_path.parent)
            done = approve_draft(
                self.suite_path, draft.name, approver=who, use_observed=use_observed
            )
        except (ApprovalError, DraftsError, OSError) as exc:
            self.post_message(DraftApproved(draft.name, None, str(exc)))
            return
        warning = None
        if self.history_path is not None:
            try:
                with History.open(self.history_path) as history:
                    history.record_approval(done.event)
            except HistoryError as exc:
                warning = f"approval not recorded in the history: {exc}"
        self.post_message(DraftApproved(draft.name, who, None, warning))

    def on_draft_approved(self, message: DraftApproved) -> None:
        if message.approver is None:
            notify(self, message.problem or "", title="Not approved", severity="error", timeout=8)
            return
        if message.warning is not None:
            notify(self, message.warning, severity="warning", timeout=8)
        notify(self, f"{message.draft} approved into {self.suite_path.name} by {message.approver}")
        self.reload(run=False)

    def action_discard(self) -> None:
        draft = self.current
        if draft is None:
            return
        try:
            discard_draft(self.suite_path, draft.name)
        except DraftsError as exc:
            notify(self, str(exc), severity="error")
            return
        notify(self, f"{draft.name} discarded")
        self.reload(run=False)

    def action_edit(self) -> None:
        draft = self.current
        if draft is None or self._launcher is None:
            return
        line = None
        try:
            for number, text in enumerate(self.drafts_file.read_text("utf-8").splitlines(), 1):
                if text.strip() == f'name = "{draft.name}"':
                    line = number
                    break
        except OSError:
            pass
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        command = editor_command(editor, self.drafts_file, line)
        try:
            with self.app.suspend():
                self._launcher(command)
        except SuspendNotSupported:
            notify(self, "Cannot open an editor from here.", severity="warning")
            return
        except OSError as error:
            notify(self, f"Cannot start {command[0]}: {error}", severity="error")
            return
        self.reload()
