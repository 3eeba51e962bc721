"""The keys that act on the highlighted case and on what runs: rerun it alone, run only
a pattern, open the editor at the case or at the implementation's failing line, copy its
repro command, review drafts, step back out of a field or a filter.

:class:`CaseActions` is the app's base class: it holds these actions so that the app
module keeps to the lifecycle, the messages and the layout. What it needs from the app
is declared here and provided by :class:`~cer.tui.app.CerApp`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from textual.app import App, SuspendNotSupported
from textual.widgets import Input

from cer.engine.options import RunOptions
from cer.model import Suite
from cer.selection import Selection, name_matches
from cer.session import repro_command_many
from cer.tracebacks import SourceReader, implementation_site
from cer.tui.controller import LoadFunction, RunFunction
from cer.tui.plain import notify
from cer.tui.screens.drafts import DraftsScreen
from cer.tui.state.board import Board, GroupKey
from cer.tui.state.commands import editor_command
from cer.tui.state.session import Session
from cer.tui.widgets.case_list import CaseList

Launcher = Callable[[Sequence[str]], int]
"""Runs an outside program (the editor) in the foreground and returns its exit status."""


def run_subprocess(command: Sequence[str]) -> int:
    """The launcher the app uses unless a test hands in another."""
    return subprocess.call(list(command))


PATTERN_PLACEHOLDER = "run only the cases whose name matches (a pattern; empty: all again)"


class CaseActions(App[None]):
    """The case- and run-level key actions of the cer-tui app."""

    suite_path: Path
    options: RunOptions
    implementations: tuple[RunOptions, ...]
    history_path: Path | None
    base_selection: Selection
    run_pattern: str
    board: Board
    session: Session
    _launcher: Launcher
    _run_function: RunFunction
    _load_function: LoadFunction

    @property
    def suite(self) -> Suite | None:
        """The suite as last loaded (the app provides it)."""
        raise NotImplementedError

    def start_run(self, selection: Selection, trigger: str, *, narrow: bool = True) -> None:
        """Start a run of ``selection`` (the app provides it)."""
        raise NotImplementedError

    def _close_filter(self) -> None:
        raise NotImplementedError

    def _set_filters(
        self,
        *,
        failures_only: bool | None = None,
        text: str | None = None,
        group: GroupKey | bool | None = False,
    ) -> None:
        raise NotImplementedError

    @property
    def case_list(self) -> CaseList:
        return self.query_one("#cases", CaseList)

    def action_rerun_case(self) -> None:
        row = self.case_list.highlighted_row
        if row is None:
            return
        self.start_run(
            replace(self.base_selection, names=frozenset({row.name})),
            f"rerun: {row.name}",
            narrow=False,  # the highlighted case, whatever the run pattern
        )

    def action_run_pattern(self) -> None:
        # Opens empty, so that ``n`` Enter clears the pattern as the help says; the
        # pattern in force is in the placeholder.
        field = self.query_one("#pattern", Input)
        field.value = ""
        field.placeholder = (
            f"only {self.run_pattern!r} now: Enter runs every case again, or type a pattern"
            if self.run_pattern
            else PATTERN_PLACEHOLDER
        )
        field.add_class("-shown")
        field.focus()

    def set_run_pattern(self, pattern: str) -> None:
        """Run only the cases whose name matches ``pattern`` from now on, on every
        trigger, until it is cleared (``""`` runs every case again)."""
        cases = () if self.suite is None else self.suite.cases
        if pattern and cases and not any(name_matches(pattern, case.name) for case in cases):
            notify(self, f"No case name matches {pattern!r}.", severity="warning")
            return
        self.run_pattern = pattern
        trigger = f"rerun: only {pattern!r}" if pattern else "rerun: every case"
        self.start_run(self.base_selection, trigger)

    def action_edit_code(self) -> None:
        row = self.case_list.highlighted_row
        site = None if row is None or row.result is None else implementation_site(row.result)
        if site is None:
            notify(
                self,
                "No line of the implementation to open: the case did not fail in it.",
                title="Code",
            )
            return
        # The file name is the implementation's claim: open only a file it loaded and
        # could read (cer.tracebacks.SourceReader), never one a traceback merely names.
        access = self.session.lanes[0].source_access if self.session.lanes else None
        data = SourceReader(access).source(site)
        if isinstance(data, str):
            notify(self, f"Not opening {site.path}: {data}.", title="Code", severity="warning")
            return
        self._open_editor(Path(site.path), site.line)

    def action_edit_case(self) -> None:
        row = self.case_list.highlighted_row
        if row is None:
            return
        self._open_editor(self.suite_path, row.case.line)

    def _open_editor(self, path: Path, line: int | None) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        try:
            command = editor_command(editor, path, line)
        except ValueError as error:
            notify(self, f"Not opening {path}: {error}", severity="warning")
            return
        try:
            with self.suspend():
                self._launcher(command)
        except SuspendNotSupported:
            notify(self, "Cannot open an editor from here.", severity="warning")
        except OSError as error:
            notify(self, f"Cannot start {command[0]}: {error}", severity="error")

    def action_drafts(self) -> None:
        """Open the drafts screen: what cer derive proposed, run, for review. Drafts
        stay on that screen: never in the list, the totals or the history."""
        self.push_screen(
            DraftsScreen(
                self.suite_path,
                self.options,
                history=self.history_path,
                launcher=self._launcher,
                run=self._run_function,
                load=self._load_function,
            )
        )

    def action_copy_repro(self) -> None:
        row = self.case_list.highlighted_row
        if row is None:
            return
        command = repro_command_many(self.suite_path, self.implementations, row.name)
        self.copy_to_clipboard(command)
        notify(self, command, title="Copied")

    def action_step_back(self) -> None:
        pattern = self.query_one("#pattern", Input)
        if pattern.has_focus:
            pattern.remove_class("-shown")
            self.case_list.focus()
            return
        field = self.query_one("#filter", Input)
        if field.has_focus:
            field.value = ""
            self._close_filter()
            return
        if self.focused is not self.case_list:
            self.case_list.focus()
            return
        filters = self.board.filters
        if filters.text or filters.group is not None:
            field.value = ""
            self._set_filters(text="", group=None)
