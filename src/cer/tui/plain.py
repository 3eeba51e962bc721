"""Untrusted text on a Textual screen: shown as it is, never read as markup.

Textual reads a plain string handed to a ``Static``, a notification or a toast as
content markup: ``[b]4[/b]`` would show as a bold ``4``, and ``[/nope]`` raises and takes
the app down. What the implementation said (a value, a reason, a message, a file name)
reaches a widget only through this module: :func:`plain` makes a ``rich.text.Text``
(never parsed) with control and bidi characters shown as escapes
(:func:`cer.text.safetext.for_terminal`), and :func:`notify` posts a notification with
markup off. cer's own strings go the same way, so no call site has to know which is which.
"""

from __future__ import annotations

from typing import Protocol

from rich.style import Style
from rich.text import Text
from textual.notifications import SeverityLevel

from cer.text.safetext import for_terminal

__all__ = ["Notifier", "notify", "plain"]


class Notifier(Protocol):
    """What has ``notify``: the app, a screen, a widget."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...


def plain(text: object, style: str | Style = "", *, multiline: bool = True) -> Text:
    """``text`` as a ``Text`` shown character for character: markup is not parsed, and
    control, bidi and invisible characters and lone surrogates appear as escapes."""
    return Text(for_terminal(str(text), multiline=multiline), style=style)


def notify(
    target: Notifier,
    message: str,
    *,
    title: str = "",
    severity: SeverityLevel = "information",
    timeout: float | None = None,
) -> None:
    """A toast showing ``message`` and ``title`` as they are (markup off, escapes on)."""
    target.notify(
        for_terminal(message),
        title=for_terminal(title, multiline=False),
        severity=severity,
        timeout=timeout,
        markup=False,
    )
