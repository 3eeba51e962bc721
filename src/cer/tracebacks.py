"""The implementation's part of a traceback, and the lines of its code where it failed.

A traceback reaches the supervisor as text written on the implementation's side: it is
data, never executed and never trusted. This module only reads it:

- :func:`trim` drops the runner's own frames (cer's modules, and importlib's machinery
  on the way to the implementation's module) and says how many it hid, so that what
  the user reads starts at their code;
- :func:`failure_site` names the implementation's file and line where it failed (the
  innermost frame that is not the runner's);
- :func:`code_frame` reads a few lines around that line from the file on disk, on the
  supervisor's side, as pytest and vitest show them. Only a regular ``.py`` file of
  bounded size is read, and every line comes back shortened and with its control
  characters escaped (:func:`cer.safetext.for_terminal`).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from cer.model import CaseResult
from cer.safetext import for_terminal

RUNNER_DIR = str(Path(__file__).resolve().parent)
"""The folder of cer's own modules: frames in it are the runner's."""

MAX_TRACEBACK = 256 * 1024
"""Characters of a traceback :func:`trim` reads; a longer one is shown as it is."""

MAX_SOURCE = 2 * 1024 * 1024
"""Bytes of a source file :func:`code_frame` reads; a larger file gets no code frame."""

MAX_LINE = 160
"""Characters of a source line a code frame shows."""

_FRAME = re.compile(r'^  File "(?P<file>[^"\n]+)", line (?P<line>\d{1,9})(?:,? in (?P<func>.*))?$')
"""A frame of a Python traceback (``File "f.py", line 3, in g``) or of a faulthandler
dump (``File "f.py", line 3 in g``)."""

STACK_HEADING = "Stack of the case's process when it was stopped (most recent call first):"
"""The first line of a timed-out case's stack, as the supervisor labels it."""


@dataclass(frozen=True)
class Site:
    """Where the implementation failed: its file, line and function (``None`` for a
    syntax error, whose traceback line names no function)."""

    path: str
    line: int
    function: str | None = None


@dataclass(frozen=True)
class CodeFrame:
    """Lines of the implementation's source around ``site.line``: ``(number, text)``,
    the text already escaped for a terminal."""

    site: Site
    lines: tuple[tuple[int, str], ...]

    def render(self, *, where: str | None = None) -> list[str]:
        """``at FILE:LINE in FUNC`` and the numbered lines, the failing one marked
        ``>``, as pytest and vitest show them."""
        site = self.site
        name = where if where is not None else display_path(site.path)
        heading = f"at {name}:{site.line}" + (f" in {site.function}" if site.function else "")
        width = len(str(self.lines[-1][0])) if self.lines else 1
        out = [for_terminal(heading, multiline=False)]
        for number, text in self.lines:
            mark = ">" if number == site.line else " "
            out.append(f"{mark} {number:>{width}} | {text}".rstrip())
        return out


def is_runner_file(path: str) -> bool:
    """Whether a frame's file is the runner's: cer's own modules, importlib's frozen
    bootstrap, ``importlib/__init__.py`` (``import_module``), or runpy (the worker
    runs as ``python -m cer.worker``)."""
    if path.startswith(("<frozen importlib", "<frozen runpy>")):
        return True
    if path.startswith(RUNNER_DIR + os.sep):
        return True
    return path.endswith(f"{os.sep}importlib{os.sep}__init__.py")


def _frames(lines: list[str]) -> list[tuple[int, int, str]]:
    """``(first, end, file)`` for every frame: its ``File`` line and the indented
    source and caret lines under it."""
    found = []
    index = 0
    while index < len(lines):
        match = _FRAME.match(lines[index])
        if match is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].startswith("    "):
            end += 1
        found.append((index, end, match.group("file")))
        index = end
    return found


def trim(text: str) -> str:
    """``text`` without the runner's frames: each run of them becomes one line
    ``  [N runner frames hidden]``, so nothing disappears unsaid."""
    if len(text) > MAX_TRACEBACK or "  File " not in text:
        return text
    lines = text.splitlines()
    out: list[str] = []
    hidden = 0
    position = 0
    for first, end, path in _frames(lines):
        if not is_runner_file(path):
            continue
        if first > position:
            if hidden:
                out.append(_hidden_line(hidden))
                hidden = 0
            out.extend(lines[position:first])
        hidden += 1
        position = end
    if hidden:
        out.append(_hidden_line(hidden))
    out.extend(lines[position:])
    trimmed = "\n".join(out)
    return trimmed + "\n" if text.endswith("\n") else trimmed


def _hidden_line(count: int) -> str:
    return f"  [{count} runner frame{'s' if count != 1 else ''} hidden]"


def failure_site(text: str | None) -> Site | None:
    """The innermost frame of the last traceback in ``text`` that is not the runner's
    (for a syntax error, the file and line it names), or None."""
    if not text or len(text) > MAX_TRACEBACK:
        return None
    lines = text.splitlines()
    if any("(most recent call first)" in line for line in lines[:3]):
        return _innermost_of_dump(lines)
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback ")), default=0)
    site = None
    for line in lines[start:]:
        match = _FRAME.match(line)
        if match is not None and not is_runner_file(match.group("file")):
            site = Site(match.group("file"), int(match.group("line")), match.group("func"))
    return site


def _innermost_of_dump(lines: list[str]) -> Site | None:
    """The first implementation frame of a faulthandler dump (most recent call first),
    in the thread that was running the case (``Current thread``) when it names one."""
    start = next((i for i, line in enumerate(lines) if line.startswith("Current thread")), 0)
    for line in lines[start:]:
        if line.startswith("Thread ") and not line.startswith("Current thread"):
            break  # another thread's stack
        match = _FRAME.match(line)
        if match is not None and not is_runner_file(match.group("file")):
            return Site(match.group("file"), int(match.group("line")), match.group("func"))
    return None


def implementation_site(result: CaseResult) -> Site | None:
    """Where in the implementation ``result``'s case failed: the innermost frame of its
    traceback that is not the runner's, or None."""
    return failure_site(result.traceback)


def code_frame(site: Site | None, context: int = 2) -> CodeFrame | None:
    """The source lines around ``site`` (``context`` before and after), read from the
    file it names, or None when there is no such regular ``.py`` file of at most
    :data:`MAX_SOURCE` bytes, or no such line in it."""
    if site is None or site.line < 1 or not site.path.endswith(".py"):
        return None
    path = Path(site.path)
    if not path.is_absolute():
        return None
    try:
        with open(path, "rb", opener=_no_follow_fifo) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE:
                return None
            data = handle.read(MAX_SOURCE + 1)
    except OSError:
        return None
    source = data.decode("utf-8", errors="replace").splitlines()
    if site.line > len(source):
        return None
    first = max(1, site.line - context)
    last = min(len(source), site.line + context)
    return CodeFrame(
        site, tuple((number, _shown(source[number - 1])) for number in range(first, last + 1))
    )


def _no_follow_fifo(path: str, flags: int) -> int:
    """Open without blocking on a FIFO (the file's type is checked once it is open)."""
    return os.open(path, flags | os.O_NONBLOCK)


def _shown(line: str) -> str:
    line = line.rstrip().expandtabs(4)
    if len(line) > MAX_LINE:
        line = line[: MAX_LINE - 1] + "…"
    return for_terminal(line, multiline=False)


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it is under it."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path
