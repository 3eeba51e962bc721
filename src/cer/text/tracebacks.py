"""The implementation's part of a traceback, and the lines of its code where it failed.

A traceback reaches the supervisor as text written on the implementation's side: it is
data, never executed and never trusted. This module only reads it:

- :func:`trim` drops the runner's own frames (cer's modules, and importlib's machinery
  on the way to the implementation's module) and says how many it hid, so that what
  the user reads starts at their code;
- :func:`failure_site` names the implementation's file and line where it failed (the
  innermost frame that is not the runner's);
- :func:`code_frame` reads a few lines around that line from the file on disk, as
  pytest and vitest show them. The file name is the implementation's claim: only a
  ``.py`` file the supervisor itself knows the implementation loaded is read, with the
  rights the implementation had (under the run's sandbox, by a confined reader), a
  regular file of bounded size; otherwise :class:`NoCode` says why no code is shown.
  Every line comes back shortened and with its control characters escaped
  (:func:`cer.text.safetext.for_terminal`).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cer.model import CaseResult, SourceAccess
from cer.text.safetext import for_terminal

RUNNER_DIR = str(Path(__file__).resolve().parents[1])
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


@dataclass(frozen=True)
class NoCode:
    """A site whose code is not shown, and why (said where the code would be)."""

    site: Site
    why: str

    def render(self, *, where: str | None = None) -> list[str]:
        """``at FILE:LINE in FUNC (no code shown: WHY)``, one line, escaped."""
        site = self.site
        name = where if where is not None else display_path(site.path)
        heading = f"at {name}:{site.line}" + (f" in {site.function}" if site.function else "")
        return [for_terminal(f"{heading} (no code shown: {self.why})", multiline=False)]


def claim_refusal(site: Site, access: SourceAccess | None) -> str | None:
    """Why cer does not open the file ``site`` names, or None when it may.

    A traceback is the implementation's text, so the file it names is a claim: cer
    opens only a Python file the supervisor itself checked and hashed as one the
    implementation loaded (:class:`cer.model.SourceAccess`), by an absolute path."""
    if access is None:
        return "cer does not know which files the implementation loaded"
    path = site.path
    if not path.endswith(".py") or not os.path.isabs(path):
        return "not a Python file the implementation loaded"
    if path not in access.files:
        return "not a file the implementation loaded (a traceback's file name is only its claim)"
    return None


class SourceReader:
    """Reads the implementation's source files for code frames, as the implementation
    could: a file passes :func:`claim_refusal` first, and under a sandbox it is read by
    a program confined to the run's own rules (so a symbolic link out of what the
    implementation could read is refused by the kernel, as it was for it). Files are
    read once per reader, several at a time with :meth:`preload`."""

    def __init__(self, access: SourceAccess | None) -> None:
        self.access = access
        self._read: dict[str, bytes | str] = {}

    def preload(self, sites: Iterable[Site | None]) -> None:
        """Read the files of ``sites`` that may be read, in one go."""
        paths = sorted(
            {
                site.path
                for site in sites
                if site is not None
                and site.path not in self._read
                and claim_refusal(site, self.access) is None
            }
        )
        if not paths or self.access is None:
            return
        if self.access.confined_reader:
            self._read.update(_read_confined(self.access.confined_reader, paths))
        else:
            self._read.update((path, _read_source(path)) for path in paths)

    def source(self, site: Site) -> bytes | str:
        """The bytes of the file ``site`` names, or why they are not read."""
        why = claim_refusal(site, self.access)
        if why is not None:
            return why
        if site.path not in self._read:
            self.preload([site])
        return self._read.get(site.path, "it could not be read")

    def frame(self, site: Site | None, context: int = 2) -> CodeFrame | NoCode | None:
        """:func:`code_frame` of ``site`` through this reader."""
        if site is None:
            return None
        data = self.source(site)
        if isinstance(data, str):
            return NoCode(site, data)
        return _frame_of(site, data, context)


def code_frame(
    site: Site | None, access: SourceAccess | None, context: int = 2
) -> CodeFrame | NoCode | None:
    """The source lines around ``site`` (``context`` before and after), or why they are
    not shown (see :class:`SourceReader`); None without a site."""
    return SourceReader(access).frame(site, context)


def _frame_of(site: Site, data: bytes, context: int) -> CodeFrame | NoCode:
    source = data.decode("utf-8", errors="replace").splitlines()
    if site.line < 1 or site.line > len(source):
        return NoCode(site, f"the file has no line {site.line}")
    first = max(1, site.line - context)
    last = min(len(source), site.line + context)
    return CodeFrame(
        site, tuple((number, _shown(source[number - 1])) for number in range(first, last + 1))
    )


def _read_source(path: str) -> bytes | str:
    """The bytes of a regular file of at most :data:`MAX_SOURCE` bytes, or why not."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return f"it could not be opened ({exc.strerror or exc})"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > MAX_SOURCE:
            return f"larger than {MAX_SOURCE} bytes"
        return handle.read(MAX_SOURCE + 1)


_READER = """
import os, stat, sys
out = sys.stdout.buffer
for path in sys.argv[1:]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        why = (exc.strerror or "error").encode()
        out.write(b"no it could not be opened with the implementation's rights (" + why + b")\\n")
        continue
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            out.write(b"no not a regular file\\n")
        elif info.st_size > LIMIT:
            out.write(b"no larger than %d bytes\\n" % LIMIT)
        else:
            data = handle.read(LIMIT)
            out.write(b"ok %d\\n" % len(data) + data)
"""
"""The program that reads source files under the run's sandbox (``LIMIT`` is
:data:`MAX_SOURCE`): for each path, ``ok N`` and N bytes, or ``no WHY``."""

READ_TIMEOUT = 10.0
"""Seconds the confined reader may take for all its files."""


def _read_confined(prefix: Sequence[str], paths: list[str]) -> dict[str, bytes | str]:
    """Each path's bytes (or why not), read by :data:`_READER` under ``prefix`` (the
    launcher that applies the run's Landlock rules)."""
    program = f"LIMIT = {MAX_SOURCE}\n{_READER}"
    command = [*prefix, sys.executable, "-I", "-S", "-c", program, *paths]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            timeout=READ_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return dict.fromkeys(paths, f"the sandboxed reader did not run ({exc})")
    found: dict[str, bytes | str] = {}
    data = done.stdout
    for path in paths:
        head, newline, rest = data.partition(b"\n")
        if not newline:
            break
        word, _, tail = head.partition(b" ")
        if word == b"ok" and tail.isdigit():
            size = int(tail)
            found[path], data = rest[:size], rest[size:]
        else:
            found[path], data = tail.decode("utf-8", "replace"), rest
    for path in paths:
        found.setdefault(path, "the sandboxed reader could not read it")
    return found


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
