"""The shapes of what goes between the supervisor and a worker, defined once for both
ends of the pipe: the supervisor's requests (:class:`LoadRequest`, :class:`CaseMessage`,
the :data:`SEQ` number a case is handed over under), the worker's answers
(:class:`Loaded`, :class:`Confined`, :class:`ResultMessage`: a :data:`WorkerMessage`)
and the result payload a case's process writes of one call of the implementation
(:class:`Payload`, tagged by one of the payload kinds below).

The worker (:mod:`cer.worker`) writes the answers and the payload; the engine and the
judge (:func:`cer.judge.verdict.outcome_from_worker`) read them. They come from the
implementation's side of the pipe: the types here say what an honest worker writes,
and the reading side still checks every value it uses, whatever these types say.
"""

from __future__ import annotations

import struct
from typing import Any, Final, Literal, TypedDict

SEQ = struct.Struct(">Q")
"""The sequence number before a case message in a ``KIND_CASE`` frame
(:data:`cer.wire.framing.KIND_CASE`): the unguessable id a result must name."""


# --- the supervisor's requests ----------------------------------------------------------


class LoadRequest(TypedDict, total=False):
    """``op = "load"``: import the implementation, under the run's sandbox."""

    op: Literal["load"]
    impl: str
    paths: list[str]
    isolation: str
    capture_limit: int
    max_memory: int | None
    timeout: float
    sandbox: str | None
    sandbox_abi: int
    alone: bool
    """The worker runs one case inline, then ends (a case that runs alone)."""
    confine: bool
    """Forbid new processes before the import (a case whose memory is measured)."""
    no_buffers: bool
    """With ``confine``: forbid pipes and sockets too (no memory cgroup counts their
    kernel buffers)."""


class CaseMessage(TypedDict):
    """One case, encoded with :mod:`cer.wire.plaindata` after its :data:`SEQ` number."""

    name: str
    case_class: str
    category: str
    tags: list[str]
    model: str
    input: Any


# --- the worker's answers ---------------------------------------------------------------


class Loaded(TypedDict, total=False):
    """``op = "loaded"``: how the import went (``ok``), the files it loaded."""

    op: Literal["loaded"]
    ok: bool
    kind: str
    reason: str
    traceback: str
    output: str
    files: list[str]


class Confined(TypedDict):
    """``op = "confined"``: whether new processes were forbidden before the import
    (``why`` not, when ``ok`` is false)."""

    op: Literal["confined"]
    ok: bool
    why: str


class Exit(TypedDict, total=False):
    """How a case's run ended: ``how`` is ``inline``, ``exited`` (with ``code``),
    ``signal`` (with ``signal`` and ``name``), ``timeout``, ``too_large`` or
    ``unstarted``."""

    how: Literal["inline", "exited", "signal", "timeout", "too_large", "unstarted"]
    code: int
    signal: int
    name: str


class ResultMessage(TypedDict, total=False):
    """``op = "result"``: one case's end, naming its :data:`SEQ` number; the case's
    result payload (:class:`Payload`) follows in a raw frame of its own."""

    op: Literal["result"]
    seq: int
    exit: Exit
    stdout: str
    stderr: str
    dropped: int
    anomaly: str | None
    strays: int
    stack: str


WorkerMessage = Loaded | Confined | ResultMessage
"""Every control message a worker sends."""


# --- the result payload of one call ------------------------------------------------------

RETURNED: Final = "ret"
"""The implementation returned plain data (``v``)."""
RAISED: Final = "exc"
"""It raised an Exception (``type``, ``qualname``, ``msg``, ``tb``)."""
NOT_PLAIN: Final = "bad"
"""It returned something that is not plain data (``path``, ``why``)."""
BASE_EXCEPTION: Final = "base"
"""It raised a BaseException that is not an Exception."""
OUT_OF_MEMORY: Final = "mem"
"""It raised MemoryError."""
THREAD_FAILED: Final = "thread"
"""An exception escaped a thread the case started (``tb``)."""
MISFIT: Final = "misfit"
"""The implementation could not be called with the case (``msg``)."""
SETUP_FAILED: Final = "setup"
"""Setting the call up failed: a class's constructor, a category model (``msg``)."""
AFTER_RETURN: Final = "after"
"""It returned, then something was raised outside it (a hook, another thread)."""
ENCODE_FAILED: Final = "encode"
"""The runner could not encode what it returned (``msg``)."""

PayloadKind = Literal[
    "ret", "exc", "bad", "base", "mem", "thread", "misfit", "setup", "after", "encode"
]
"""The tag (``k``) of a result payload: one of the constants above."""

CRASH_KINDS: Final = frozenset({BASE_EXCEPTION, OUT_OF_MEMORY, THREAD_FAILED})
"""Payload kinds the supervisor treats as a crash."""


class Payload(TypedDict, total=False):
    """What a case's process reports of one call: ``k`` always, the rest by kind."""

    k: PayloadKind
    v: Any
    """The returned value, as :func:`cer.wire.plaindata.to_wire` wrote it."""
    type: str
    qualname: str
    msg: str
    tb: str
    path: str
    why: str
    via: str
    """How the implementation was called when not with the input's keys as arguments."""
    files: list[str] | str
    """Files of modules first loaded while the case ran, or ``"unknown"``."""
