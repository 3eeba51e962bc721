"""The run screen: the main view of cer-tui, a suite's cases and their latest results.

The app builds it with all it works with: the :class:`~cer.tui.settings.TuiSettings`
cer-tui was started with, the :class:`~cer.tui.state.session.Session` it shows and the
:class:`~cer.tui.controller.RunController` that runs it; the screen reads nothing else
of the app. It shows the session (header, summary, banner, the case list and the detail
panes, the filter and pattern fields) and applies to it the messages the controller's
workers post about the runs. Its keys act on what it shows: the highlighted case (rerun
it alone, open the editor at it or at the implementation's failing line, copy its repro
command), what runs (rerun all, the failed, only a pattern: the run pattern is the
screen's own), the filters, the panes, the matrix and the drafts. The app keeps what
outlives the view: the session, the run controller, the themes, the signals and the
global keys (theme, pause, help, quit).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Footer, Input

from cer.config import repro_command_many
from cer.suite.selection import Selection, name_matches
from cer.text.tracebacks import SourceReader, implementation_site
from cer.tui import messages
from cer.tui.controller import RunController
from cer.tui.keys import bindings, screen_keys
from cer.tui.plain import notify
from cer.tui.screens.drafts import DraftsScreen
from cer.tui.screens.group import GroupScreen
from cer.tui.screens.matrix import MatrixScreen
from cer.tui.settings import TuiSettings
from cer.tui.state.bars import HeaderState, SummaryState
from cer.tui.state.board import GroupKey
from cer.tui.state.editor import editor_command
from cer.tui.state.session import Failure, Session
from cer.tui.state.styles import DetailStyles
from cer.tui.theming import detail_styles
from cer.tui.widgets.banner import Banner
from cer.tui.widgets.case_list import CaseList
from cer.tui.widgets.detail_panes import DetailPanes
from cer.tui.widgets.diff_pane import DiffPane
from cer.tui.widgets.header_bar import HeaderBar
from cer.tui.widgets.line_pane import LinePane
from cer.tui.widgets.output_pane import OutputPane
from cer.tui.widgets.summary_bar import SummaryBar
from cer.tui.widgets.text_pane import TextPane

PATTERN_PLACEHOLDER = "run only the cases whose name matches (a pattern; empty: all again)"


class RunScreen(Screen[None]):
    """The cases of the suite, their results and the details of the highlighted one."""

    BINDINGS: ClassVar[list[BindingType]] = list(bindings(screen_keys(several=True)))
    """The view's keys; those of several lanes are hidden (check_action) with one."""

    header_state: reactive[HeaderState] = reactive(HeaderState(), repaint=False)
    """What the header bar shows (bound to it): set it and the bar repaints."""
    summary_state: reactive[SummaryState] = reactive(SummaryState(), repaint=False)
    """What the summary bar shows (bound to it): set it and the bar repaints (the bar
    alone: a repaint of the screen would draw every widget again on each batch)."""

    def __init__(self, settings: TuiSettings, session: Session, control: RunController) -> None:
        super().__init__()
        self.settings = settings
        """What cer-tui was started with: the suite, the implementations, watching,
        the history, and the functions the runs and the editor go through."""
        self.session = session
        """What the screen shows: the suite and a lane per implementation."""
        self.control = control
        """Starts and cancels the runs whose messages the screen applies to the session."""
        self.run_pattern = ""
        """The pattern of ``n``: only the cases whose name matches it run ("" for all)."""
        self.details_shown: tuple[str | None, int] = (None, 0)
        """The case whose details the panes show, and the request they answered."""
        self._details_token = 0
        self._detail_styles: DetailStyles | None = None

    @property
    def case_list(self) -> CaseList:
        return self.query_one("#cases", CaseList)

    @property
    def banner(self) -> Banner:
        return self.query_one("#banner", Banner)

    # -- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header").data_bind(state=RunScreen.header_state)
        yield SummaryBar(id="summary").data_bind(state=RunScreen.summary_state)
        yield Banner(id="banner")
        with Horizontal(id="main"):
            labels = self.session.labels if self.session.several else ()
            yield CaseList(self.session.board, labels=labels, id="cases")
            yield DetailPanes(id="details", initial="reason")
        yield Input(
            placeholder="filter: words in the name, a tag, a category or a verified constraint",
            id="filter",
        )
        yield Input(
            placeholder=PATTERN_PLACEHOLDER,
            id="pattern",
        )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Start watching and the first run once the view is there to show them."""
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        self.case_list.focus()
        self.refresh_header()
        self.refresh_summary()
        if self.settings.watch:
            self.control.restart_watch()
            self.refresh_header()
        self.start_run(self.settings.base_selection, "first run")

    # -- the runs' messages -----------------------------------------------------------

    def on_suite_loaded(self, message: messages.SuiteLoaded) -> None:
        control = self.control
        if not control.is_current(message):
            return
        if message.selection is not None:  # the cycle narrowed what it runs
            control.selection = message.selection
        changed = self.session.load(message.suite, control.selection)
        control.module_doc = message.module_doc
        unmatched = self.session.unmatched_entries() if changed else ()
        if unmatched:
            # The file was checked against the suite as it was when cer-tui started; a
            # case renamed or removed since leaves an entry that cer run would refuse.
            more = f" (and {len(unmatched) - 1} more)" if len(unmatched) > 1 else ""
            notify(
                self,
                f"{unmatched[0]}{more}: cer run refuses this baseline; remove the entry "
                "or correct its case",
                title="Baseline",
                severity="warning",
            )
        if self.banner.kind == "suite-error":
            self.banner.clear()
        self.case_list.remove_class("-dimmed")
        self.case_list.rows_changed(layout=changed)
        self.refresh_header()
        self.refresh_summary()
        self._refresh_details()

    def on_suite_failed(self, message: messages.SuiteFailed) -> None:
        control = self.control
        if not control.is_current(message):
            return
        control.suite_cache = None
        self.session.suite_failed()
        self.case_list.add_class("-dimmed")
        self.banner.show_error(
            "suite-error",
            "The suite does not load; the last results are kept, dimmed. "
            "Fix the file and it reruns.",
            message.message,
        )
        self.case_list.rows_changed()
        self.refresh_summary()

    def on_run_started(self, message: messages.RunStarted) -> None:
        if self.control.is_current(message):
            session = self.session
            session.running = message.lane
            session.lanes[message.lane].board.total = message.total
            self.refresh_summary()

    def on_implementation_loaded(self, message: messages.ImplementationLoaded) -> None:
        if not self.control.is_current(message):
            return
        self.session.loaded(message.lane, message.implementation_id, message.source_files)
        self._show_import_failures()
        if self.control.sources_reported() and self.settings.watch:
            self.control.restart_watch()
        self.refresh_header()

    def on_implementation_failed(self, message: messages.ImplementationFailed) -> None:
        if not self.control.is_current(message):
            return
        lane = self.session.lanes[message.lane]
        lane.import_failure = Failure(message.reason, message.traceback)
        self._show_import_failures()

    def _show_import_failures(self) -> None:
        """The banner for the lanes that did not load, or none."""
        banner = self.session.import_banner()
        if banner is not None:
            self.banner.show_error("import-error", *banner)
        elif self.banner.kind == "import-error":
            self.banner.clear()

    def on_cases_finished(self, message: messages.CasesFinished) -> None:
        if not self.control.is_current(message):
            return
        results, done, total = message.stream.drain()
        if not results:
            return
        changed = self.session.lanes[message.lane].board.record(results, done, total)
        if message.lane:
            self.session.board.refilter()  # a peer's results change what the filters show
        self.case_list.rows_recorded(changed)
        self.refresh_summary()
        current = self.case_list.cursor_name
        if current is not None and any(r.case_name == current for r in results):
            self._refresh_details()

    def on_run_finished(self, message: messages.RunFinished) -> None:
        """One lane finished its run: show it, and keep what its coverage is to be
        judged by once every lane has had its turn."""
        if not self.control.is_current(message):
            return
        session = self.session
        lane = session.lanes[message.lane]
        lane.finish(message.run, session.suite, message.rest, message.count)
        if message.lane:
            self.session.board.refilter()
        if not any(lane.crash for lane in session.lanes) and self.banner.kind == "run-error":
            self.banner.clear()
        self.case_list.rows_changed()
        self.refresh_summary()
        self._refresh_details()

    def on_runs_finished(self, message: messages.RunsFinished) -> None:
        """Every lane has had its turn: the cycle counts as one finished run, and the
        coverage and the matrix are judged again by what the list shows (once per cycle:
        a matrix of 65,000 cases takes seconds to build)."""
        if not self.control.is_current(message):
            return
        self.refresh_summary()
        if not self.session.cycle_finished(message.completed):
            return  # every lane crashed: the banner says so, no toast
        self.control.request_coverage()
        if self.session.several:
            self.control.request_matrix()
        announcement = self.session.announcement()
        if announcement is not None:
            notify(
                self,
                announcement.message,
                title=announcement.title,
                severity=announcement.severity,
                timeout=4,
            )

    def on_matrix_computed(self, message: messages.MatrixComputed) -> None:
        if message.token != self.control.matrix_token:
            return
        self.session.set_matrix(message.matrix)
        self.case_list.refresh()
        self.refresh_summary()
        self._refresh_details()
        if isinstance(self.app.screen, MatrixScreen):
            self.app.screen.update(message.matrix)

    def on_coverages_computed(self, message: messages.CoveragesComputed) -> None:
        if message.token != self.control.coverage_token:
            return
        for lane, view in zip(self.session.lanes, message.views, strict=True):
            lane.coverage = view
        self._refresh_details()

    def on_history_recorded(self, message: messages.HistoryRecorded) -> None:
        if self.control.history_recorded(message):
            self.case_list.refresh()
            self.refresh_summary()
            self._refresh_details()

    def on_run_cancelled(self, message: messages.RunCancelled) -> None:
        if self.control.is_current(message):
            self.session.abandon()
            self.refresh_summary()

    def on_run_crashed(self, message: messages.RunCrashed) -> None:
        """The runner crashed on a lane; the next lane still runs, and the banner names
        the one that crashed."""
        if not self.control.is_current(message):
            return
        self.session.crashed(message.lane, Failure(message.message, message.traceback))
        title = self.session.crash_title(message.lane, message.message)
        self.banner.show_error("run-error", title, message.traceback)
        self.refresh_summary()

    # -- header, summary, details -----------------------------------------------------

    def refresh_header(self) -> None:
        """Show what the header says now."""
        watch = self.control.describe_watch(self.settings.watch)
        self.header_state = self.session.header(watch)

    def refresh_summary(self) -> None:
        """Show what the summary bar says now, and the group-by view's figures when it
        is open (it follows the results as they land)."""
        self.summary_state = replace(self.session.summary(), pattern=self.run_pattern)
        screen = self.app.screen
        if isinstance(screen, GroupScreen):
            screen.sections = self.session.board.groups()

    def detail_styles(self) -> DetailStyles:
        """The panes' styles from the current theme (cached until the theme changes)."""
        if self._detail_styles is None:
            self._detail_styles = detail_styles(
                self.case_list,
                self.query_one("#diff-pane", DiffPane),
                self.query_one("#output-pane", OutputPane),
            )
        return self._detail_styles

    @property
    def details_settled(self) -> bool:
        """Whether the panes show the latest details of the highlighted case."""
        return self.details_shown == (self.case_list.cursor_name, self._details_token)

    def _refresh_details(self) -> None:
        """Render the highlighted case's details again, off the event loop."""
        self._details_token += 1
        self.control.render_details(
            self.case_list.highlighted_row, self.detail_styles(), self._details_token
        )

    def on_details_rendered(self, message: messages.DetailsRendered) -> None:
        if message.token != self._details_token:
            return
        try:
            panes = self.query_one("#details", DetailPanes)
        except NoMatches:
            return  # a late answer while the app closes: the panes are gone
        self.details_shown = (message.case_name, message.token)
        panes.details = message.details

    @on(CaseList.CaseHighlighted)
    def _case_highlighted(self, event: CaseList.CaseHighlighted) -> None:
        self._refresh_details()

    def _theme_changed(self, theme: Theme) -> None:
        """The styles are the new theme's now: render the details with them (once the
        panes are there: the first theme is announced while the screen is built)."""
        self._detail_styles = None
        if not self.query("#diff-pane"):
            return
        self.case_list.refresh()
        self._refresh_details()

    # -- filter and pattern fields ------------------------------------------------------

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._set_filters(text=event.value)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self._close_filter()

    def _close_filter(self) -> None:
        self.query_one("#filter", Input).remove_class("-shown")
        self.case_list.focus()

    def _set_filters(
        self,
        *,
        failures_only: bool | None = None,
        text: str | None = None,
        group: GroupKey | bool | None = False,
    ) -> None:
        self.session.board.set_filters(failures_only=failures_only, text=text, group=group)
        self.case_list.rows_changed()
        self.refresh_summary()

    @on(Input.Submitted, "#pattern")
    def _pattern_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("-shown")
        self.case_list.focus()
        self.set_run_pattern(event.value.strip())

    def set_run_pattern(self, pattern: str) -> None:
        """Run only the cases whose name matches ``pattern`` from now on, on every
        trigger, until it is cleared (``""`` runs every case again)."""
        cases = () if self.session.suite is None else self.session.suite.cases
        if pattern and cases and not any(name_matches(pattern, case.name) for case in cases):
            notify(self, f"No case name matches {pattern!r}.", severity="warning")
            return
        self.run_pattern = pattern
        trigger = f"rerun: only {pattern!r}" if pattern else "rerun: every case"
        self.start_run(self.settings.base_selection, trigger)

    # -- what runs ----------------------------------------------------------------------

    def start_run(self, selection: Selection, trigger: str, *, narrow: bool = True) -> None:
        """Cancel the run in flight, if any, and start a new one (with ``narrow``,
        narrowed to the run pattern when one is set: the other cases keep their results,
        dimmed)."""
        if selection.names is not None:  # the run's conditions say how they were chosen
            selection = replace(selection, chosen_by=f"cer-tui {trigger}")
        suite = self.session.suite
        if narrow and self.run_pattern and suite is not None:
            names = {c.name for c in suite.cases if name_matches(self.run_pattern, c.name)}
            chosen = f"cer-tui run pattern {self.run_pattern!r}"
            if selection.names is not None:
                names &= selection.names
                chosen = f"{selection.chosen_by}; {chosen}"
            selection = replace(selection, names=frozenset(names), chosen_by=chosen)
        self.control.start(selection, trigger)
        self.refresh_header()
        self.refresh_summary()

    def action_rerun_all(self) -> None:
        self.start_run(self.settings.base_selection, "rerun: requested")

    def action_rerun_failed(self) -> None:
        self.control.rerun_failed()

    def action_rerun_case(self) -> None:
        row = self.case_list.highlighted_row
        if row is None:
            return
        self.start_run(
            replace(self.settings.base_selection, names=frozenset({row.name})),
            f"rerun: {row.name}",
            narrow=False,  # the highlighted case, whatever the run pattern
        )

    def action_run_pattern(self) -> None:
        # Opens empty, so that ``n`` Enter clears the pattern as the help says; the
        # pattern in force is in the placeholder.
        field = self.query_one("#pattern", Input)
        field.value = ""
        run_pattern = self.run_pattern
        field.placeholder = (
            f"only {run_pattern!r} now: Enter runs every case again, or type a pattern"
            if run_pattern
            else PATTERN_PLACEHOLDER
        )
        field.add_class("-shown")
        field.focus()

    # -- the list: filters and groups ---------------------------------------------------

    def action_toggle_failures(self) -> None:
        self._set_filters(failures_only=not self.session.board.filters.failures_only)

    def action_start_filter(self) -> None:
        field = self.query_one("#filter", Input)
        field.add_class("-shown")
        field.focus()

    def action_group_by(self) -> None:
        board = self.session.board

        def chosen(result: GroupKey | bool | None) -> None:
            if result is False:
                return
            self._set_filters(group=result if isinstance(result, GroupKey) else None)

        self.app.push_screen(GroupScreen(board.groups(), board.filters.group), chosen)

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
        filters = self.session.board.filters
        if filters.text or filters.group is not None:
            field.value = ""
            self._set_filters(text="", group=None)

    def show_case(self, name: str) -> bool:
        """Select the case called ``name`` in the list, clearing the filters that hide it."""
        if self.case_list.select_name(name):
            return True
        self.query_one("#filter", Input).value = ""
        self._set_filters(failures_only=False, text="", group=None)
        return self.case_list.select_name(name)

    # -- the detail panes ---------------------------------------------------------------

    def action_focus_details(self) -> None:
        self.query_one("#details", DetailPanes).focus_active()

    def action_cycle_pane(self) -> None:
        self.query_one("#details", DetailPanes).cycle()
        if isinstance(self.focused, (LinePane, TextPane)):
            self.action_focus_details()

    def action_cycle_pane_back(self) -> None:
        """Shift-Tab: the previous pane. The focus stays where it was (the list, or the
        pane on view), so the cursor keys never act on a widget that does not show it."""
        self.query_one("#details", DetailPanes).cycle(-1)
        if isinstance(self.focused, (LinePane, TextPane)):
            self.action_focus_details()

    # -- the highlighted case: editor, repro --------------------------------------------

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
        # could read (cer.text.tracebacks.SourceReader), never one a traceback merely names.
        lanes = self.session.lanes
        access = lanes[0].source_access if lanes else None
        data = SourceReader(access).source(site)
        if isinstance(data, str):
            notify(self, f"Not opening {site.path}: {data}.", title="Code", severity="warning")
            return
        self._open_editor(Path(site.path), site.line)

    def action_edit_case(self) -> None:
        row = self.case_list.highlighted_row
        if row is None:
            return
        self._open_editor(self.settings.suite_path, row.case.line)

    def _open_editor(self, path: Path, line: int | None) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        try:
            command = editor_command(editor, path, line)
        except ValueError as error:
            notify(self, f"Not opening {path}: {error}", severity="warning")
            return
        try:
            with self.app.suspend():
                self.settings.launcher(command)
        except SuspendNotSupported:
            notify(self, "Cannot open an editor from here.", severity="warning")
        except OSError as error:
            notify(self, f"Cannot start {command[0]}: {error}", severity="error")

    def action_copy_repro(self) -> None:
        row = self.case_list.highlighted_row
        if row is None:
            return
        settings = self.settings
        command = repro_command_many(settings.suite_path, settings.implementations, row.name)
        self.app.copy_to_clipboard(command)
        notify(self, command, title="Copied")

    # -- the other views: matrix, drafts ------------------------------------------------

    def action_matrix(self) -> None:
        """Open the Matrix view; choosing a case there selects it in the list."""
        if not self.session.several:
            return
        matrix = self.session.matrix
        if matrix is None:
            notify(self, "The matrix is built once every implementation has run.", title="Matrix")
            return

        def chosen(name: str | None) -> None:
            if name is not None:
                self.show_case(name)

        self.app.push_screen(
            MatrixScreen(
                matrix, self.settings.suite_path.name, statuses=self.detail_styles().statuses
            ),
            chosen,
        )

    def action_drafts(self) -> None:
        """Open the drafts screen: what cer derive proposed, run, for review. Drafts
        stay on that screen: never in the list, the totals or the history."""
        self.app.push_screen(
            DraftsScreen(
                self.settings.suite_path,
                self.settings.options,
                history=self.settings.history,
                launcher=self.settings.launcher,
                run=self.settings.run,
                load=self.settings.load,
            )
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keep the view's keys out of the filter and pattern fields (but esc), and the
        keys of several lanes away from one."""
        if action == "matrix" and not self.session.several:
            return False
        focused = self.focused
        return not (isinstance(focused, Input) and action != "step_back")
