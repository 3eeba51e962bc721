"""Every key the app answers to, in one table: the bindings, the footer, the help screen
and the documentation are all made from it, so they cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Key:
    """A key (or keys, comma-separated in Textual's names), its action and its help."""

    keys: str
    action: str
    label: str
    help: str
    shown: str
    footer: bool = True
    priority: bool = False


APP_KEYS: tuple[Key, ...] = (
    # The footer shows the keys with ``footer=True`` in this order, most used first, and
    # fits 80 columns (Textual puts priority bindings first: tab leads); the help screen
    # and docs/tui.md list them all.
    Key(
        "tab",
        "cycle_pane",
        "Pane",
        "Cycle the detail panes: Reason, Diff, Output, Case, Coverage",
        "tab",
        priority=True,
    ),
    Key("r", "rerun_all", "Rerun", "Rerun every selected case", "r"),
    Key("s", "rerun_case", "This", "Rerun the highlighted case alone", "s"),
    Key(
        "n",
        "run_pattern",
        "Only",
        "Run only the cases whose name matches a pattern (empty: all)",
        "n",
    ),
    Key(
        "R",
        "rerun_failed",
        "Failed",
        "Rerun failed and errored cases (at start: the last recorded run's)",
        "R",
    ),
    Key("f", "toggle_failures", "Failures", "Show failures only / show every case", "f"),
    Key(
        "shift+tab",
        "cycle_pane_back",
        "Pane back",
        "Cycle the detail panes backwards",
        "shift+tab",
        footer=False,
        priority=True,
    ),
    Key("e", "edit_case", "Edit", "Open $EDITOR at the case's line in the suite file", "e"),
    Key(
        "E",
        "edit_code",
        "Code",
        "Open $EDITOR at the implementation's failing line",
        "E",
    ),
    Key(
        "slash",
        "start_filter",
        "Filter",
        "Filter the list by name, tag, category or constraint",
        "/",
        footer=False,
    ),
    Key(
        "g",
        "group_by",
        "Group",
        "Group-by view: category, class, severity, constraint, tag",
        "g",
        footer=False,
    ),
    Key(
        "enter",
        "focus_details",
        "Details",
        "Move the focus into the detail pane",
        "enter",
        footer=False,
    ),
    Key(
        "escape",
        "step_back",
        "Back",
        "Back to the list; clear the filter and group",
        "esc",
        footer=False,
    ),
    Key(
        "D",
        "drafts",
        "Drafts",
        "Review drafts from cer derive: accept, edit, skip, discard",
        "D",
        footer=False,
    ),
    Key(
        "y",
        "copy_repro",
        "Repro",
        "Copy a one-line reproduction (cer run … --case)",
        "y",
        footer=False,
    ),
    Key("t", "cycle_theme", "Theme", "Switch to the next colour theme", "t", footer=False),
    Key("p", "toggle_watch", "Pause", "Pause or resume watching for changes", "p", footer=False),
    Key("question_mark", "help", "Help", "Show this help", "?"),
    Key("q", "quit", "Quit", "Quit", "q"),
    Key(
        "ctrl+c",
        "quit",
        "Quit",
        "Quit",
        "ctrl+c",
        footer=False,
        priority=True,
    ),
)

MATRIX_KEYS: tuple[Key, ...] = (
    Key(
        "m",
        "matrix",
        "Matrix",
        "Matrix view: cases by implementations, disagreements first",
        "m",
    ),
)
"""Keys that only mean something with several implementations: the app hides them from
the footer and the help with one implementation, whose screen stays as it was."""

MATRIX_AFTER = "group_by"
"""The matrix key sits after this action in the footer and the help."""

LIST_KEYS: tuple[Key, ...] = (
    Key("j,down", "cursor_down", "Down", "Next case", "j ↓", footer=False),
    Key("k,up", "cursor_up", "Up", "Previous case", "k ↑", footer=False),
    Key("pagedown", "page_down", "Page down", "Next page of cases", "pgdn", footer=False),
    Key("pageup", "page_up", "Page up", "Previous page of cases", "pgup", footer=False),
    Key("home", "first", "First", "First case", "home", footer=False),
    Key("end,G", "last", "Last", "Last case", "end G", footer=False),
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
    """The app's keys in footer order; with ``several`` the matrix keys too."""
    if not several:
        return APP_KEYS
    keys: list[Key] = []
    for key in APP_KEYS:
        keys.append(key)
        if key.action == MATRIX_AFTER:
            keys.extend(MATRIX_KEYS)
    return tuple(keys)


def help_rows(several: bool = False) -> list[tuple[str, str]]:
    """(keys as shown, what they do) for the help screen and the docs, list keys first;
    with ``several`` the keys of several implementations too."""
    return [(key.shown, key.help) for key in (*LIST_KEYS, *app_keys(several))]
