"""Keep the implementation's text from acting on a GitHub Actions log.

GitHub's runner reads every line a step prints as a possible workflow command: a line
that starts with ``::`` once its leading spaces are removed (``::add-mask::WORD``,
``::error::…``, ``::stop-commands::…``), and ``##[`` anywhere in a line (the older
form). ``cer`` prints the implementation's own text (its messages, captured output,
tracebacks and values), indented or inside JSON, so without care an implementation
could mask the words of the log (``::add-mask::failed``), raise annotations of its
own, or stop the runner from reading ``cer``'s annotations.

Under GitHub Actions (``GITHUB_ACTIONS=true``) ``cer`` therefore begins its output with
``::stop-commands::TOKEN``, which makes the runner ignore every workflow command until
it reads ``::TOKEN::``, and writes that line only around its own annotations
(``--report github``) and when it exits. ``TOKEN`` is new for every run and random; the
implementation never sees ``cer``'s output, so it cannot end the pause early.
Elsewhere nothing is added to the output.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TextIO

__all__ = ["PAUSE", "CommandPause"]


class CommandPause:
    """Pauses GitHub Actions' workflow commands on ``stream`` while the output may hold
    the implementation's text (see the module's documentation)."""

    def __init__(self, stream: TextIO, *, active: bool) -> None:
        self.stream = stream
        self.active = active
        self.token = os.urandom(16).hex()  # secrets.token_hex(16), without its imports
        self.paused = False

    @classmethod
    def from_environment(
        cls, stream: TextIO, environ: Mapping[str, str] | None = None
    ) -> CommandPause:
        """A pause that acts only under GitHub Actions (``GITHUB_ACTIONS=true``)."""
        environ = os.environ if environ is None else environ
        return cls(stream, active=environ.get("GITHUB_ACTIONS") == "true")

    def pause(self) -> None:
        """From here on, the runner ignores workflow commands."""
        if self.active and not self.paused:
            self._write(f"::stop-commands::{self.token}\n")
            self.paused = True

    def resume(self) -> None:
        """From here on, the runner acts on workflow commands again."""
        if self.paused:
            self._write(f"::{self.token}::\n")
            self.paused = False

    @contextmanager
    def own_commands(self) -> Iterator[None]:
        """Around ``cer``'s own workflow commands: resumed inside, paused again after."""
        was_paused = self.paused
        self.resume()
        try:
            yield
        finally:
            if was_paused:
                self.pause()

    def _write(self, line: str) -> None:
        try:
            self.stream.write(line)
            self.stream.flush()
        except (OSError, ValueError):  # a closed standard output: nothing to protect
            pass


PAUSE = CommandPause(sys.stdout, active=False)
"""The pause of this ``cer`` process's standard output, set by :func:`cer.cli.main.main`
for the command it runs; a report that writes workflow commands of its own (``--report
github`` to standard output) writes them inside :meth:`CommandPause.own_commands`."""
