"""Every key the app answers to, in one table: the bindings, the footer, the help screen
and the documentation are all made from it, so they cannot drift apart.

Each key names its target, the one that binds it and has its action: ``app`` the
:class:`~cer.tui.app.CerApp` (the global keys: theme, pause, help, quit), ``screen`` the
:class:`~cer.tui.screens.run.RunScreen` (the keys of what it shows), ``widget`` the
:class:`~cer.tui.widgets.case_list.CaseList` (the cursor keys)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from textual.binding import Binding

from cer.tui.state.details import PANES

Target = Literal["app", "screen", "widget"]
"""Who binds a key and has its action: the app, the run screen, the case list."""


@dataclass(frozen=True)
class Key:
    """A key (or keys, comma-separated in Textual's names), its action, its help and
    the target whose ``action_...`` it runs."""

    keys: str
    action: str
    label: str
    help: str
    shown: str
    footer: bool = True
    priority: bool = False
    target: Target = field(kw_only=True)


APP_KEYS: tuple[Key, ...] = (
    # The footer shows the keys with ``footer=True`` in this order, most used first, and
    # fits 80 columns (Textual puts priority bindings first: tab leads); the help screen
    # and docs/tui.md list them all. The app's keys come last: the footer shows the run
    # screen's bindings before the app's.
    Key(
        "tab",
        "cycle_pane",
        "Pane",
        f"Cycle the detail panes: {', '.join(pane.title for pane in PANES)}",
        "tab",
        priority=True,
        target="screen",
    ),
    Key("r", "rerun_all", "Rerun", "Rerun every selected case", "r", target="screen"),
    Key("s", "rerun_case", "This", "Rerun the highlighted case alone", "s", target="screen"),
    Key(
        "n",
        "run_pattern",
        "Only",
        "Run only the cases whose name matches a pattern (empty: all)",
        "n",
        target="screen",
    ),
    Key(
        "R",
        "rerun_failed",
        "Failed",
        "Rerun failed and errored cases (at start: the last recorded run's)",
        "R",
        target="screen",
    ),
    Key(
        "f",
        "toggle_failures",
        "Failures",
        "Show failures only / show every case",
        "f",
        target="screen",
    ),
    Key(
        "shift+tab",
        "cycle_pane_back",
        "Pane back",
        "Cycle the detail panes backwards",
        "shift+tab",
        footer=False,
        priority=True,
        target="screen",
    ),
    Key(
        "e",
        "edit_case",
        "Edit",
        "Open $EDITOR at the case's line in the suite file",
        "e",
        target="screen",
    ),
    Key(
        "E",
        "edit_code",
        "Code",
        "Open $EDITOR at the implementation's failing line",
        "E",
        target="screen",
    ),
    Key(
        "slash",
        "start_filter",
        "Filter",
        "Filter the list by name, tag, category or constraint",
        "/",
        footer=False,
        target="screen",
    ),
    Key(
        "g",
        "group_by",
        "Group",
        "Group-by view: category, class, severity, constraint, tag",
        "g",
        footer=False,
        target="screen",
    ),
    Key(
        "enter",
        "focus_details",
        "Details",
        "Move the focus into the detail pane",
        "enter",
        footer=False,
        target="screen",
    ),
    Key(
        "escape",
        "step_back",
        "Back",
        "Back to the list; clear the filter and group",
        "esc",
        footer=False,
        target="screen",
    ),
    Key(
        "D",
        "drafts",
        "Drafts",
        "Review drafts from cer derive: accept, edit, skip, discard",
        "D",
        footer=False,
        target="screen",
    ),
    Key(
        "y",
        "copy_repro",
        "Repro",
        "Copy a one-line reproduction (cer run … --case)",
        "y",
        footer=False,
        target="screen",
    ),
    Key(
        "t",
        "cycle_theme",
        "Theme",
        "Switch to the next colour theme",
        "t",
        footer=False,
        target="app",
    ),
    Key(
        "p",
        "toggle_watch",
        "Pause",
        "Pause or resume watching for changes",
        "p",
        footer=False,
        target="app",
    ),
    Key("question_mark", "help", "Help", "Show this help", "?", target="app"),
    Key("q", "quit", "Quit", "Quit", "q", target="app"),
    Key(
        "ctrl+c",
        "quit",
        "Quit",
        "Quit",
        "ctrl+c",
        footer=False,
        priority=True,
        target="app",
    ),
)

MATRIX_KEYS: tuple[Key, ...] = (
    Key(
        "m",
        "matrix",
        "Matrix",
        "Matrix view: cases by implementations, disagreements first",
        "m",
        target="screen",
    ),
)
"""Keys that only mean something with several implementations: the app hides them from
the footer and the help with one implementation, whose screen stays as it was."""

MATRIX_AFTER = "group_by"
"""The matrix key sits after this action in the footer and the help."""

LIST_KEYS: tuple[Key, ...] = (
    Key("j,down", "cursor_down", "Down", "Next case", "j ↓", footer=False, target="widget"),
    Key("k,up", "cursor_up", "Up", "Previous case", "k ↑", footer=False, target="widget"),
    Key(
        "pagedown",
        "page_down",
        "Page down",
        "Next page of cases",
        "pgdn",
        footer=False,
        target="widget",
    ),
    Key(
        "pageup",
        "page_up",
        "Page up",
        "Previous page of cases",
        "pgup",
        footer=False,
        target="widget",
    ),
    Key("home", "first", "First", "First case", "home", footer=False, target="widget"),
    Key("end,G", "last", "Last", "Last case", "end G", footer=False, target="widget"),
)


def bindings(keys: tuple[Key, ...]) -> list[Binding]:
    """Textual bindings for a key table."""
    return [
        Binding(
            key.keys,
            key.action,
            key.label,
            show=key.footer,
            key_display=key.shown,
            priority=key.priority,
        )
        for key in keys
    ]


def app_keys(several: bool = True) -> tuple[Key, ...]:
    """The keys of the app and its run screen in footer order (the screen's lead, the
    app's end it); with ``several`` the matrix keys too."""
    if not several:
        return APP_KEYS
    keys: list[Key] = []
    for key in APP_KEYS:
        keys.append(key)
        if key.action == MATRIX_AFTER:
            keys.extend(MATRIX_KEYS)
    return tuple(keys)


def screen_keys(several: bool = True) -> tuple[Key, ...]:
    """The run screen's keys, in footer order (with ``several``, the matrix key too)."""
    return tuple(key for key in app_keys(several) if key.target == "screen")


def global_keys() -> tuple[Key, ...]:
    """The app's own keys, in footer order: they come after the screen's there."""
    return tuple(key for key in APP_KEYS if key.target == "app")


def help_rows(several: bool = False) -> list[tuple[str, str]]:
    """(keys as shown, what they do) for the help screen and the docs, list keys first;
    with ``several`` the keys of several implementations too."""
    return [(key.shown, key.help) for key in (*LIST_KEYS, *app_keys(several))]
