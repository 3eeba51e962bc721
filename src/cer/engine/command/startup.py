"""Why a command could not start, said once in words: above all when the sandbox
refused it a file it needs to start (a version manager's script behind a shim, an
interpreter installed where the sandbox does not lend), which the program itself
reports as a bare "Permission denied"."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from cer.engine.command.protocol import stderr_hint
from cer.engine.kinds import kind_named
from cer.sandbox import Policy
from cer.sandbox.readset import Refusal

__all__ = ["denied_path", "headline", "note"]

_DENIALS = (
    re.compile(r"(/[^\s:'\"]+): [Pp]ermission denied"),  # sh, bash, exec
    re.compile(r"'(/[^']+)': \[Errno 13\] Permission denied"),  # python's "can't open file"
    re.compile(r"\[Errno 13\] Permission denied: '(/[^']+)'"),
    re.compile(r"EACCES: permission denied, \w+ '(/[^']+)'"),  # node
)
_ABSENCES = (
    re.compile(r"(/[^\s:'\"]+): (?:not found|No such file or directory)"),  # sh, bash, exec
    re.compile(r"'(/[^']+)': \[Errno 2\] No such file or directory"),  # python
    re.compile(r"\[Errno 2\] No such file or directory: '(/[^']+)'"),
    re.compile(r"ENOENT: no such file or directory, \w+ '(/[^']+)'"),  # node
)
"""In the implementation's world what the sandbox does not lend is absent: a path
not found there that exists outside is one it refused."""


def denied_path(stderr: str, policy: Policy | None, refused: Sequence[Refusal] = ()) -> str:
    """The first path in ``stderr`` that the program could not open for lack of
    permission and that the sandbox does not lend; empty when there is none (or no
    sandbox)."""
    if policy is None:
        return ""
    for pattern in _DENIALS:
        for match in pattern.finditer(stderr):
            path = os.path.abspath(match.group(1))
            if _lent(path, policy, refused):
                continue
            return path
    if policy.world:
        for pattern in _ABSENCES:
            for match in pattern.finditer(stderr):
                path = os.path.abspath(match.group(1))
                if not os.path.lexists(path) or _lent(path, policy, refused):
                    continue
                return path
    return ""


def _lent(path: str, policy: Policy, refused: Sequence[Refusal]) -> bool:
    real = os.path.realpath(path)
    if any(_within(real, refusal.path) for refusal in refused):
        return False
    return any(_within(real, root) or _within(path, root) for root in policy.read)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _home(path: str) -> str:
    home = os.path.expanduser("~").rstrip("/")
    if home and home != "/" and path.startswith(home + "/"):
        return "~" + path[len(home) :]
    return path


def headline(
    kind: str,
    impl: str,
    reason: str,
    stderr: str,
    policy: Policy | None,
    refused: Sequence[Refusal] = (),
) -> str:
    """One line that says which kind of implementation could not start and why:
    ``the harness could not start under the sandbox: ~/.pyenv/libexec/pyenv:
    permission denied (allow it with --sandbox-read ~/.pyenv/libexec/pyenv, or run
    with --sandbox off)``, or ``the command implementation CMD could not be started:
    REASON``; ``reason`` without the tail of stderr (:func:`note` adds it)."""
    path = denied_path(stderr, policy, refused)
    who = kind_named(kind).noun
    if path:
        shown = _home(path)
        what = "not in its world" if policy is not None and policy.world else "permission denied"
        return (
            f"{who} could not start under the sandbox: {shown}: {what} (allow "
            f"it with --sandbox-read {shown}, or run with --sandbox off)"
        )
    hint = stderr_hint(stderr)
    if hint and reason.endswith(hint):
        reason = reason[: -len(hint)]
    return f"the command implementation {impl} could not be started: {reason}"


def note(line: str, stderr: str) -> str:
    """The run's note for a command that could not start: ``line`` and the end of its
    stderr, the evidence, once."""
    return line + stderr_hint(stderr)
