"""One case's result as cer-tui keeps it: what the list draws, with the evidence packed.

A judged result carries its evidence as Python objects: the observation's tables and
arrays, the mismatches, the captured output. Live, that is over a kilobyte a case even
for a small observation, so a run of 100,000 cases held that way costs more than the
suite itself, while the list only ever draws a status and a time. A :class:`KeptResult`
keeps those (and the case's identity) as plain fields, and the evidence as one
:mod:`pickle` of it, about a tenth of the size, unpacked only when a case's details, the
matrix or a test asks for the whole result.

The packed bytes are made here, in this process, from the values of a result the
supervisor already decoded and judged; they are never written anywhere nor read back
from anywhere else, so unpickling them rebuilds exactly those plain values (and
:class:`~cer.model.Mismatch` and :data:`~cer.model.MISSING`), nothing else.

What comes out is for a screen: :meth:`KeptResult.result` passes it through
:func:`cer.text.safetext.displayed` (the implementation's text shown as escapes, never
obeyed), as the results the TUI held whole were.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from typing import Any

from cer.model import CaseResult, FailClass, Mismatch, Status
from cer.results.baseline import never_ran
from cer.text.safetext import displayed

_Evidence = tuple[
    str | None,  # reason
    str,  # stdout
    str,  # stderr
    str | None,  # traceback
    Any,  # observation
    tuple[Mismatch, ...],  # mismatches
]
_NO_EVIDENCE: _Evidence = (None, "", "", None, None, ())


@dataclass(frozen=True, slots=True)
class KeptResult:
    """A result as a row keeps it: identity, status and time as they are, the evidence
    (reason, output, traceback, observation, mismatches) packed (:meth:`of`) or the
    whole result (:meth:`whole_of`); see the module's docstring."""

    case_name: str
    case_class: str
    category: str
    status: Status
    elapsed_ms: int | None
    position: int
    packed: bytes | None
    """The evidence, pickled; None when the result has none (nothing to unpack)."""
    whole: CaseResult | None = None
    """The result itself, already fit for the screen, when it is kept whole
    (:meth:`whole_of`, or evidence pickle refuses); :meth:`result` returns it as is."""
    not_run: bool = False
    """Whether the result is the runner's ``not run: <cause>`` (see
    :func:`cer.results.baseline.never_ran`), at hand so that a baseline's reading of
    the row never takes such a case for the known failure an entry lists."""
    fail_class: FailClass | None = None
    """The result's fail class, as the supervisor decided it."""

    @classmethod
    def of(cls, result: CaseResult, *, observation: bool = True) -> KeptResult:
        """Keep ``result`` (as the engine reported it: :meth:`result` makes it fit for
        the screen). Without ``observation``, keep all of it but its observation (then
        None): only the comparison of several implementations shows an observation, and
        one implementation's panes show what differs through the mismatches, so a
        session of one implementation need not hold the observations of its cases."""
        packed: bytes | None = None
        whole: CaseResult | None = None
        observed = result.observation if observation else None
        if (
            result.reason is not None
            or result.stdout
            or result.stderr
            or result.traceback is not None
            or observed is not None
            or result.mismatches
        ):
            evidence: _Evidence = (
                result.reason,
                result.stdout,
                result.stderr,
                result.traceback,
                observed,
                result.mismatches,
            )
            try:
                packed = pickle.dumps(evidence, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # whatever pickle refuses (it raises several kinds)
                whole = displayed(result if observation else replace(result, observation=None))
        return cls(
            result.case_name,
            result.case_class,
            result.category,
            result.status,
            result.elapsed_ms,
            result.position,
            packed,
            whole,
            never_ran(result),
            result.fail_class,
        )

    @classmethod
    def whole_of(cls, result: CaseResult) -> KeptResult:
        """Keep ``result`` whole, made fit for the screen once: what several
        implementations' rows do, since the matrix built after every cycle holds every
        result of every lane anyway (packing them would only add a copy, and unpacking
        them all for each matrix the time to do it)."""
        return cls(
            result.case_name,
            result.case_class,
            result.category,
            result.status,
            result.elapsed_ms,
            result.position,
            None,
            displayed(result),
            never_ran(result),
            result.fail_class,
        )

    def result(self) -> CaseResult:
        """The whole result as a screen may show it (:func:`cer.text.safetext.displayed`):
        unpacked, or the one kept whole."""
        if self.whole is not None:
            return self.whole
        reason, stdout, stderr, traceback, observation, mismatches = (
            _NO_EVIDENCE if self.packed is None else pickle.loads(self.packed)
        )
        return displayed(
            CaseResult(
                case_name=self.case_name,
                case_class=self.case_class,
                category=self.category,
                status=self.status,
                reason=reason,
                stdout=stdout,
                stderr=stderr,
                traceback=traceback,
                elapsed_ms=self.elapsed_ms,
                observation=observation,
                mismatches=mismatches,
                position=self.position,
                fail_class=self.fail_class,
            )
        )

    def bare(self) -> CaseResult:
        """The result without its evidence: the case, its status and its time, all that
        constraint coverage judges by (no unpacking)."""
        return CaseResult(
            case_name=self.case_name,
            case_class=self.case_class,
            category=self.category,
            status=self.status,
            elapsed_ms=self.elapsed_ms,
            position=self.position,
            fail_class=self.fail_class,
        )
