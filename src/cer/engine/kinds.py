"""The kinds of implementation cer runs, each declared once: its name, the ``cer run``
option and the ``[tool.cer]`` keys that name one, the prefix of its implementation id,
and the backend that runs its cases.

Every place that reads a kind asks this table (:data:`KINDS`, :func:`kind_named`):
the command line and the configuration, the pytest plugin, the runner choosing the
backend, the plan, the sandbox's policy, labels, ids and repro lines. A new kind is a
new :class:`Kind` here and its backend (docs/architecture.md, "Where a new X goes":
"An implementation kind").

The backend is named as a string (``module:Class``, as an entry point names an object)
and imported only when a run of that kind starts, so that this table imports nothing:
the backends and what they use consult it in turn.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "IMPLEMENTATION_KINDS",
    "KINDS",
    "ImplementationKind",
    "Kind",
    "guess_kind",
    "kind_named",
    "kind_of_id",
]

ImplementationKind = Literal["python", "command", "command-per-case"]
"""What the implementation is: a Python object, a long-lived command harness, or one
command per case (one :class:`Kind` each in :data:`KINDS`)."""


@dataclass(frozen=True)
class Kind:
    """One kind of implementation, and every name it goes by."""

    name: ImplementationKind
    """``RunOptions.kind``."""
    option: str
    """The ``cer run`` / ``cer-tui`` option that names one (``--impl-cmd``); the pytest
    plugin's is the same with ``--cer-`` in front (``--cer-impl-cmd``)."""
    metavar: str
    """What the option takes, as ``--help`` shows it."""
    help: str
    """The option's ``--help`` text."""
    summary: str
    """What such an implementation is, in a few words (the pytest plugin's help)."""
    config_key: str
    """The ``[tool.cer]`` key (and the ``pytest_suites`` table key) that names one."""
    entry_key: str
    """The key of a ``[tool.cer] impls`` table entry that names one."""
    id_prefix: str
    """What its implementation id starts with before ``:`` (``cmd:WORDS@HASH``); empty
    for Python, whose id is ``MODULE:ATTR@HASH``."""
    python: bool
    """A Python object (``MODULE:ATTR``) that cer's workers import: isolation, ``-j``,
    memory bounds and the entry-point execution models apply. Otherwise the
    implementation is a command line, split like a shell splits words."""
    noun: str
    """How a reason names what could not start (``the harness``)."""
    backend: str
    """``module:Class`` of its :class:`~cer.engine.execution.Execution`, built from the
    run's :class:`~cer.engine.execution.Setup`; a Python implementation's also takes
    ``warm=`` (workers started ahead of time) and ``provided=`` (the object given as the
    implementation), see :class:`cer.engine.python.state.PythonExecution`."""

    def load_backend(self) -> Any:
        """The backend class (imported now: a run of this kind starts)."""
        module, _, name = self.backend.partition(":")
        return getattr(importlib.import_module(module), name)

    def id_stem(self, words: str) -> str:
        """An implementation id without its hash: ``words`` (the implementation as
        named, or a command's words joined again) after the kind's prefix."""
        return f"{self.id_prefix}:{words}" if self.id_prefix else words


KINDS: dict[ImplementationKind, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            name="python",
            option="--impl",
            metavar="MODULE:ATTR",
            help="the implementation under test: a function, a class (one instance per "
            "case) or an object with run_case(case); the suite's folder and the working "
            "directory are on the import path (repeatable, and mixable with --impl-cmd and "
            "--impl-cmd-per-case: several implementations run side by side, docs/matrix.md)",
            summary="this Python implementation",
            config_key="impl",
            entry_key="impl",
            id_prefix="",
            python=True,
            noun="the implementation",
            backend="cer.engine.python.pool:WorkerPool",
        ),
        Kind(
            name="command",
            option="--impl-cmd",
            metavar="'COMMAND ARGS'",
            help="the implementation is a long-lived process speaking the line-delimited "
            "JSON protocol of docs/protocol.md on stdin/stdout (split like a shell, never "
            "run through one; repeatable)",
            summary="a long-lived command speaking cer's protocol",
            config_key="impl_cmd",
            entry_key="cmd",
            id_prefix="cmd",
            python=False,
            noun="the harness",
            backend="cer.engine.command.backend:CommandExecution",
        ),
        Kind(
            name="command-per-case",
            option="--impl-cmd-per-case",
            metavar="'COMMAND ARGS'",
            help="the implementation is a command run once per case: the case as JSON on "
            "stdin, the observation as JSON on stdout, exit status 0 (repeatable)",
            summary="a command run once per case",
            config_key="impl_cmd_per_case",
            entry_key="cmd_per_case",
            id_prefix="cmd-per-case",
            python=False,
            noun="the per-case command",
            backend="cer.engine.command.backend:PerCaseExecution",
        ),
    )
}
"""Every kind, in the order the options and keys are listed."""

IMPLEMENTATION_KINDS: tuple[ImplementationKind, ...] = tuple(KINDS)


def kind_named(name: str) -> Kind:
    """The kind called ``name``; ValueError for a name no kind has."""
    for kind in KINDS.values():
        if kind.name == name:
            return kind
    raise ValueError(f"kind must be one of {', '.join(IMPLEMENTATION_KINDS)}")


def kind_of_id(implementation_id: str, implementation: str = "") -> Kind:
    """The kind whose prefix an implementation id carries (Python's has none).

    An id that merely starts with the implementation as it was named
    (``implementation``, a Python ``cmd:f`` say) is that implementation's own."""
    for kind in KINDS.values():
        prefix = f"{kind.id_prefix}:"
        if (
            kind.id_prefix
            and implementation_id.startswith(prefix)
            and not implementation_id.startswith(f"{implementation}@")
        ):
            return kind
    return KINDS["python"]


def guess_kind(given: str) -> Kind:
    """The kind of an implementation known only by how it was named (a record that
    kept no kind): Python when it looks like ``MODULE:ATTR`` (a colon, no space), else
    the long-lived command."""
    return KINDS["python"] if ":" in given and " " not in given else KINDS["command"]
