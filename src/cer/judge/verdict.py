"""From what happened in a case to its status: the only place verdicts are made.

The worker reports observations (what the implementation returned or raised, how its
process ended); the supervisor turns each into an :class:`Outcome` and :func:`judge`
decides pass, fail or errored against the case's expectation. Nothing the
implementation printed or sent can name a status.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any, Literal

from cer.judge.compare import (
    OPERATORS,
    REJECTION_KEYS,
    RUNNER_OBSERVED_KEYS,
    binding_key,
    compare,
    is_operator_key,
    key_path,
    operator_of,
)
from cer.judge.equality import describe, format_value
from cer.model import MISSING, SELF_REPORTED, Case, CaseResult, FailClass, Mismatch, Status
from cer.text.tracebacks import STACK_HEADING
from cer.wire import plaindata
from cer.wire.framing import KIND_RAW, FrameError, split_frames
from cer.wire.messages import (
    AFTER_RETURN,
    BASE_EXCEPTION,
    ENCODE_FAILED,
    MISFIT,
    NOT_PLAIN,
    OUT_OF_MEMORY,
    RAISED,
    RETURNED,
    SETUP_FAILED,
    THREAD_FAILED,
    Payload,
)

HEALTH_KEYS = frozenset({"crashed", "hung"})
"""Expect keys about the implementation's health: they make a crash, a hang or an
exception something to compare rather than an error."""


OutcomeKind = Literal[
    "returned", "raised", "crashed", "timed_out", "not_plain", "lost", "import_failed"
]
"""What running one case produced, before any judgement (see :class:`Outcome`)."""


@dataclass(frozen=True)
class Outcome:
    """What running one case produced, before any judgement.

    ``kind`` is one of: ``returned`` (``value`` holds the plain data), ``raised`` (an
    Exception), ``crashed`` (a signal, an exit, a BaseException, a failing thread, a
    memory limit), ``timed_out``, ``not_plain`` (the return value was not plain data),
    ``lost`` (the runner could not get a result: malformed channel, worker died),
    ``import_failed``.
    """

    kind: OutcomeKind
    value: Any = MISSING
    error_type: str | None = None
    error_message: str | None = None
    detail: str = ""
    traceback: str | None = None
    elapsed_ms: float | None = None
    stdout: str = ""
    stderr: str = ""
    seen: bool = False
    """For ``crashed``: the supervisor saw a process it started itself end (a worker
    running the case inline, a harness, a per-case command). A crash only reported by
    the implementation's side (a worker about its own child, an exception) is data: it
    can fail a case, but it cannot satisfy ``crashed = true``."""
    memory_mb: float | None = None
    """``resident_memory_mb``: the kernel's peak resident memory of the process that ran
    the case, read by the supervisor (see docs/execution-model.md); None when the runner
    did not measure it."""
    memory_note: str = ""
    """Why ``memory_mb`` could not be measured, when a case asked for it."""
    call_note: str = ""
    """How the implementation was called when it was not with the input's keys as its
    arguments (the whole input as its one argument), as the worker reported it: shown
    in the case's reason, and a bare rejection is not believed of such a call."""
    loaded_files: object = None
    """The files of modules the case's process loaded for the first time while it ran,
    as it reported them (a list of paths, or anything else it sent): data for the
    supervisor to check and hash into the implementation id, never a fact."""
    fail_class: FailClass | None = None
    """The class a failure of a ``crashed`` or ``lost`` outcome gets when it is not its
    kind's own (:data:`KIND_CLASSES`): ``exited`` for a process that exited rather than
    was killed, ``signature`` for a call that did not fit. Set by the supervisor from
    what it saw; an outcome of another kind has its kind's class (:func:`class_of`)."""


KIND_CLASSES: Mapping[OutcomeKind, FailClass] = {
    "returned": "mismatch",
    "raised": "raised",
    "crashed": "crashed",
    "timed_out": "timed_out",
    "not_plain": "not_plain",
    "lost": "lost",
    "import_failed": "not_run",
}
"""The fail class of an outcome of each kind, unless the outcome names its own."""


_REFINED: frozenset[OutcomeKind] = frozenset({"crashed", "lost"})
"""The kinds whose outcome may name a class of its own (``exited``, ``signature``); the
others have one class each, whatever an outcome made over from another kind still holds."""


def class_of(outcome: Outcome) -> FailClass:
    """The fail class a failed or errored result of ``outcome`` carries."""
    if outcome.fail_class is not None and outcome.kind in _REFINED:
        return outcome.fail_class
    return KIND_CLASSES[outcome.kind]


def outcome_from_worker(
    meta: Mapping[str, Any],
    raw: bytes,
    timeout: float,
    capture_limit: int,
    elapsed_ms: float | None = None,
) -> Outcome:
    """Interpret a worker's ``result`` message and the case's raw result bytes.

    ``elapsed_ms`` is the supervisor's own measurement; no time the worker or the case
    reports is ever used.
    """
    stdout = str(meta.get("stdout", ""))
    stderr = str(meta.get("stderr", ""))
    dropped = meta.get("dropped", 0)
    if isinstance(dropped, int) and dropped > 0:
        note = f"\n[output truncated: {dropped} more bytes past the {capture_limit}-byte limit]"
        if stderr:
            stderr += note
        else:
            stdout += note
    anomaly = meta.get("anomaly")
    if anomaly:
        stderr += f"\n[the case {anomaly}; the worker was recycled]"
    strays = meta.get("strays")
    if type(strays) is int and strays > 0:
        plural = "es" if strays != 1 else ""
        stderr += f"\n[the case left {strays} process{plural} running; they were killed]"

    def out(kind: OutcomeKind, **fields: Any) -> Outcome:
        fields.setdefault("elapsed_ms", elapsed_ms)
        return Outcome(kind, stdout=stdout, stderr=stderr, **fields)

    how = meta.get("exit", {})
    kind = how.get("how") if isinstance(how, Mapping) else None
    if kind == "timeout":
        return out(
            "timed_out",
            detail=f"timed out after {_seconds(timeout)}",
            elapsed_ms=timeout * 1000.0,
            traceback=_stack(meta.get("stack")),
        )
    if kind == "too_large":
        return out("not_plain", detail="the observation exceeded 64 MiB")
    if kind == "signal":
        return out("crashed", detail=f"the case's process was killed by {how.get('name')}")
    if kind == "exited" and how.get("code") != 0:
        return out(
            "crashed",
            detail=f"the case's process exited with status {how.get('code')}",
            fail_class="exited",
        )
    payload_bytes: bytes | None = raw
    if kind == "exited":
        try:
            frames = split_frames(bytearray(raw))
        except FrameError as exc:
            return out("lost", detail=f"the result channel was corrupted: {exc}")
        total = sum(len(data) + 5 for _, data in frames)
        if not frames:
            if raw:
                return out("lost", detail="the result channel held a partial frame")
            payload_bytes = None
        elif len(frames) != 1 or frames[0][0] != KIND_RAW or total != len(raw):
            return out(
                "lost",
                detail="the result channel held unexpected bytes (something other than the "
                "runner wrote to it)",
            )
        else:
            payload_bytes = frames[0][1]
    elif kind != "inline":
        return out("lost", detail=f"the worker reported an unknown ending {how!r}")
    if not payload_bytes:
        return out(
            "crashed",
            detail="the case's process exited (status 0) without reporting a result",
            fail_class="exited",
        )
    try:
        # Data from the case's process: Payload says what an honest one writes, and
        # every value is checked where it is used.
        payload: Payload = plaindata.loads(payload_bytes)
        tag = payload["k"]
    except (ValueError, TypeError, KeyError) as exc:
        return out("lost", detail=f"the case sent a malformed result: {exc}")
    if tag == RETURNED and "files" not in payload and "via" not in payload:  # the common case
        return Outcome(
            "returned", value=payload.get("v"), elapsed_ms=elapsed_ms, stdout=stdout, stderr=stderr
        )
    outcome = _interpret(payload, tag, out)
    via = payload.get("via")
    if type(via) is str and via:
        outcome = replace(outcome, call_note=_short(via))
    if "files" in payload:
        return replace(outcome, loaded_files=payload["files"])
    return outcome


def _interpret(payload: Payload, tag: Any, out: Callable[..., Outcome]) -> Outcome:
    """The outcome a case's decoded result payload describes."""
    if tag == RETURNED:
        return out("returned", value=payload.get("v"))
    if tag == RAISED:
        return out(
            "raised",
            error_type=str(payload.get("type")),
            error_message=str(payload.get("msg")),
            traceback=str(payload.get("tb")),
        )
    if tag == NOT_PLAIN:
        return out(
            "not_plain",
            detail=f"the implementation returned something that is not plain data: "
            f"{payload.get('path') or '<return value>'}: {payload.get('why')}",
        )
    if tag == BASE_EXCEPTION:
        return out(
            "crashed",
            detail=f"the implementation raised {payload.get('type')} "
            f"(a BaseException, not an Exception): {payload.get('msg')}",
            traceback=str(payload.get("tb")),
        )
    if tag == MISFIT:
        return out("lost", detail=_short(str(payload.get("msg")), 1000), fail_class="signature")
    if tag == SETUP_FAILED:
        return out(
            "lost",
            detail=f"the implementation could not be set up for the case: {payload.get('msg')}",
            traceback=str(payload.get("tb")),
        )
    if tag == AFTER_RETURN:
        return out(
            "lost",
            detail=f"the implementation returned, then {payload.get('type')} was raised "
            f"outside it (a hook, or another thread): {_short(str(payload.get('msg')))}",
            traceback=str(payload.get("tb")),
        )
    if tag == ENCODE_FAILED:
        return out(
            "lost",
            detail="the runner could not encode what the implementation returned: "
            f"{_short(str(payload.get('msg')))}",
        )
    if tag == OUT_OF_MEMORY:
        return out(
            "crashed",
            detail="the implementation ran out of memory (MemoryError)",
            traceback=str(payload.get("tb")),
        )
    if tag == THREAD_FAILED:
        return out(
            "crashed",
            detail="an exception escaped a thread the case started",
            traceback=str(payload.get("tb")),
        )
    return out("lost", detail=f"the case sent an unknown result kind {tag!r}")


STACK_LIMIT = 16 * 1024
"""Characters of a timed-out case's stack kept (the worker bounds it too)."""


def _stack(stack: Any) -> str | None:
    """The stack a timed-out case's process dumped when it was stopped (faulthandler,
    signalled by the worker just before the kill), labelled as what it is: text from
    the implementation's side, bounded, never trusted beyond being shown."""
    if type(stack) is not str or not stack.strip():
        return None
    if len(stack) > STACK_LIMIT:
        stack = stack[:STACK_LIMIT] + "\n[stack cut]"
    return f"{STACK_HEADING}\n{stack.rstrip()}\n"


def _fieldless(expect: Mapping[str, Any], returned: Any) -> Mismatch | None:
    """``has_fields`` naming only the key a bare return value is observed as: that key
    is the runner's binding of the value, not a field the implementation reported, so
    ``has_fields = ["output"]`` once passed on a return of ``None``. None where it does
    not apply (a table or an array was returned, or a field is named beside it)."""
    wanted = expect.get("has_fields")
    if type(returned) is dict or type(returned) is list or type(wanted) is not list:
        return None
    bound = binding_key(expect)
    if not wanted or any(field != bound for field in wanted):
        return None  # judged as usual: a field beside the binding is missing anyway
    return Mismatch(
        "has_fields",
        f"has_fields: requires field {bound!r}, but the implementation returned "
        f"{describe(returned)}, a bare value with no fields (observed as {bound})",
        wanted,
        returned,
    )


def _short(text: str | None, limit: int = 500) -> str:
    text = text or ""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def _seconds(value: float) -> str:
    return f"{value:g} s"


def judge(case: Case, outcome: Outcome) -> CaseResult:
    """The status of ``case`` given ``outcome``; see docs/execution-model.md."""
    expect = case.expect
    elapsed = None if outcome.elapsed_ms is None else round(outcome.elapsed_ms)

    def result(
        status: Status,
        reason: str | None,
        observation: Any = None,
        mismatches: tuple[Any, ...] = (),
        fail_class: FailClass | None = None,
    ) -> CaseResult:
        note = outcome.call_note
        if note and (status is not Status.PASS or outcome.kind == "raised"):
            reason = f"{reason}\n{note}" if reason else note
        return CaseResult(
            case_name=case.name,
            case_class=case.case_class,
            category=case.category,
            status=status,
            reason=reason,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            traceback=outcome.traceback,
            elapsed_ms=elapsed,
            observation=observation,
            mismatches=mismatches,
            position=case.position,
            fail_class=None if status is Status.PASS else fail_class or default_class(status),
        )

    def default_class(status: Status) -> FailClass:
        # A case that returned is errored only when what it asks cannot be verified.
        if status is Status.ERRORED and outcome.kind == "returned":
            return "unverifiable"
        return class_of(outcome)

    def unverifiable(reason: str) -> CaseResult:
        return result(Status.ERRORED, reason, fail_class="unverifiable")

    def compared(observation: dict[str, Any]) -> CaseResult:
        reported = reported_facts(expect)
        label = reported_note(reported) if reported else None
        if not _facts(expect).operators and _surely_matches(expect, observation):
            return result(Status.PASS, label, observation)
        mismatches = _one_rejection_line(expect, outcome, compare(expect, observation))
        if outcome.kind == "returned":
            mismatches = what_came_back(expect, outcome.value, mismatches)
        if mismatches:
            reason = "\n".join(m.message for m in mismatches)
            return result(
                Status.FAIL,
                f"{reason}\n{label}" if label else reason,
                observation,
                mismatches,
                # How the case ended, when it did not answer; else what it answered.
                "mismatch" if outcome.kind in ("returned", "raised") else None,
            )
        return result(Status.PASS, label, observation)

    if not expect:
        return unverifiable("could not verify: the case's expect table is empty")
    unmeasured, memory = key_facts(expect)
    if unmeasured:
        return unverifiable(unmeasured_reason(list(unmeasured)))
    vacuous = vacuous_reason(expect)
    if vacuous:
        return unverifiable(vacuous)
    if outcome.memory_mb is None and memory:
        why = outcome.memory_note or "the runner did not measure this case"
        return unverifiable(f"could not verify {MEMORY_KEY}: {why}")
    health: dict[str, Any] = {"elapsed_ms": outcome.elapsed_ms}
    if outcome.memory_mb is not None:
        health[MEMORY_KEY] = outcome.memory_mb
    if outcome.kind == "returned":
        value = outcome.value
        if type(value) is dict and not _OWNED_NAMES.isdisjoint(value):
            return unverifiable(owned_reason([k for k in value if k in _OWNED_NAMES]))
        observation = dict(value) if type(value) is dict else {binding_key(expect): value}
        # What the runner saw for itself wins over what the implementation claims: it
        # returned, so it did not raise, crash or hang, and no error of its own making
        # (an "error" or "error_type" in what it returned) stands for a rejection.
        observation["error"] = None
        observation["error_type"] = None
        observation["rejects"] = False
        observation["crashed"] = False
        observation["hung"] = False
        # The time is the runner's own measurement: an implementation reporting its own
        # elapsed_ms must not be able to pass a time bound it did not meet.
        observation["elapsed_ms"] = outcome.elapsed_ms
        if outcome.memory_mb is not None:
            observation[MEMORY_KEY] = outcome.memory_mb
        checked = compared(observation)
        if checked.status is Status.PASS:
            fieldless = _fieldless(expect, value)
            if fieldless is not None:
                return result(Status.FAIL, fieldless.message, observation, (fieldless,), "mismatch")
        return checked
    if outcome.kind == "raised":
        if outcome.call_note and expect.get("rejects") is True and not _names_the_error(expect):
            return unverifiable(
                f"could not verify rejects = true: the implementation raised {_raised(outcome)}, "
                "but a call that does not fit raises as a refusal does; name the error "
                "(error_type or error_includes) to tell them apart",
            )
        if asks_about_a_raise(expect):
            return compared(
                {
                    "rejects": True,
                    "error": outcome.error_message,
                    "error_type": outcome.error_type,
                    "crashed": False,
                    "hung": False,
                    **health,
                }
            )
        return result(
            Status.ERRORED,
            f"the implementation raised {outcome.error_type}: {_short(outcome.error_message)}",
        )
    if outcome.kind == "timed_out" and "hung" in expect:
        return _with_detail(compared({"hung": True, "crashed": False, **health}), outcome.detail)
    if outcome.kind == "crashed" and "crashed" in expect:
        if not outcome.seen and expect["crashed"] is True:
            return unverifiable(
                f"could not verify crashed = true: {outcome.detail}; that was reported by "
                "the implementation's side, and the runner saw no process of its own end",
            )
        return _with_detail(compared({"crashed": True, "hung": False, **health}), outcome.detail)
    return result(Status.ERRORED, outcome.detail)


_ERROR_OPERATORS = tuple(
    operator for operator in OPERATORS.values() if operator.asks_error is not None
)
"""The operators that ask something of the error (``error_includes``), in the table's
order."""

_ERROR_PATHS = frozenset({*REJECTION_KEYS, "error"})
"""Mismatch paths about whether and how the implementation refused the input."""


def _one_rejection_line(
    expect: Mapping[str, Any], outcome: Outcome, mismatches: tuple[Mismatch, ...]
) -> tuple[Mismatch, ...]:
    """Say what really happened when a rejection was expected and did not happen as
    asked (or one happened where a return was expected), in one mismatch instead of
    one per key (``rejects``, ``error_includes``, ``error_type`` overlap).

    The one line says what the case expects and what the implementation did instead:
    the value it returned, or the type and message of the exception it raised. The
    other mismatches stay as they are.
    """
    about = [m for m in mismatches if m.path in _ERROR_PATHS]
    if not about:
        return mismatches
    others = [m for m in mismatches if m.path not in _ERROR_PATHS]
    wanted = []
    if "error_type" in expect and expect["error_type"] is not None:
        wanted.append(f"of type {_plain(expect['error_type'])}")
    for operator in _ERROR_OPERATORS:
        if operator.name in expect and operator.asks_error is not None:
            wanted.append(operator.asks_error(expect[operator.name]))
    if "error" in expect and expect["error"] is not None:
        wanted.append(f"equal to {format_value(expect['error'])}")
    expects_rejection = expect.get("rejects") is True or bool(wanted)
    if outcome.kind == "returned" and expects_rejection:
        what = "a rejection" + (f" (an error {', '.join(wanted)})" if wanted else "")
        did = f"returned {describe(outcome.value)}"
        value = outcome.value
        if type(value) is dict and not _RETURNED_ERROR_KEYS.isdisjoint(value):
            carried = [k for k in value if k in _RETURNED_ERROR_KEYS]
            verb = "is a value" if len(carried) == 1 else "are values"
            did += (
                f" ({' and '.join(carried)} in a returned table {verb}, not a rejection: "
                "only a raised exception, or a command's error reply, is one)"
            )
    elif outcome.kind == "raised" and expects_rejection:
        what = f"an error {', '.join(wanted)}" if wanted else "a rejection"
        did = f"raised {_raised(outcome)}"
    elif outcome.kind == "raised" and expect.get("rejects") is False:
        what = "a return (rejects = false)"
        did = f"raised {_raised(outcome)}"
        # What it did not report is a consequence of raising, not a mismatch of its own.
        others = [m for m in others if m.observed is not MISSING]
    else:
        return mismatches
    first = about[0]
    line = Mismatch(
        first.path,
        f"{first.path}: expected {what}, but the implementation {did}",
        first.expected,
        first.observed,
    )
    return (line, *others)


_RETURNED_ERROR_KEYS = frozenset(
    {
        "error",
        "error_type",
        *(operator.name for operator in _ERROR_OPERATORS),
        "error_message",
        "message",
        "exception",
    }
)
"""Keys of a returned table that read like an error the implementation meant as a
rejection: a value, named in the reason so that the author sees why it is not one."""


MAX_RETURNED_SHOWN = 300
"""Characters of a returned value a mismatch shows."""

HINT_KEYS = 1000
"""How many keys of a returned table the hints look through."""


def what_came_back(
    expect: Mapping[str, Any], returned: Any, mismatches: tuple[Mismatch, ...]
) -> tuple[Mismatch, ...]:
    """Each mismatch about a key the implementation did not report, with what it did
    return (bounded and escaped, :func:`format_value`) and, when the shape suggests the
    usual mistake, a hint: a bare value where a table was meant, a key differing only
    in case or underscores, the key one level down, a table that is the expected value
    itself rather than the observation."""
    paths: dict[str, str] = {}
    for key in expect:
        if type(key) is not str:
            continue
        found = operator_of(key)
        if found is None:
            paths[key_path("", key)] = key
        elif found[0].suffix:
            paths[key_path("", key)] = found[1]
    out: list[Mismatch] = []
    for mismatch in mismatches:
        base = paths.get(mismatch.path)
        if mismatch.observed is not MISSING or base is None:
            out.append(mismatch)
            continue
        shown = format_value(returned, MAX_RETURNED_SHOWN)
        if type(returned) is dict:
            if shown.endswith(("keys)", "key)")):  # cut: name the keys it has
                own = [format_value(k, 40) for k in islice(returned, 20)]
                more = " …" if len(returned) > 20 else ""
                shown += f" (its keys: {', '.join(own)}{more})"
            shown = f"dict {shown}"
        else:
            shown = f"{describe(returned)}, observed as {binding_key(expect)}"
        hint = _shape_hint(expect, base, returned)
        message = f"{mismatch.message}; it returned {shown}{f' ({hint})' if hint else ''}"
        out.append(Mismatch(mismatch.path, message, mismatch.expected, mismatch.observed))
    return tuple(out)


def _squashed(name: str) -> str:
    return name.replace("_", "").replace("-", "").casefold()


def _shape_hint(expect: Mapping[str, Any], base: str, returned: Any) -> str:
    """The usual mistake the returned value's shape points to, or ``""``."""
    if type(returned) is not dict:
        bound = binding_key(expect)
        if bound == base:
            return ""
        return (
            f"hint: a value that is not a table is observed as {bound} (the one key expect "
            f'compares as a value, else output); return a table {{"{base}": …}} to report '
            f"{base}"
        )
    keys = list(islice(returned, HINT_KEYS))
    near = [k for k in keys if type(k) is str and k != base and _squashed(k) == _squashed(base)]
    if near:
        return f"hint: it has {near[0]!r}, which differs from {base!r} only in case or underscores"
    below = [
        k for k in keys if type(k) is str and type(returned[k]) is dict and base in returned[k]
    ]
    if below:
        return (
            f"hint: {base} is one level down, under {below[0]!r}; report it at the top "
            "of the returned table"
        )
    # what expect wants of the key: its value, or any of the values an operator on it
    # lists as values it may equal (base_any_of)
    wanted_values = [expect.get(base)]
    for operator in OPERATORS.values():
        listed = expect.get(f"{base}{operator.name}") if operator.choices else None
        wanted_values.extend(listed if type(listed) is list else ())
    if returned and any(
        type(wanted) is dict and wanted and set(returned) <= set(wanted) for wanted in wanted_values
    ):
        return (
            f"hint: it looks like the value of {base} itself; a returned table is the "
            f'observation, so return {{"{base}": {{…}}}}'
        )
    return ""


def _names_the_error(expect: Mapping[str, Any]) -> bool:
    """Whether ``expect`` says which error it expects, beyond that there is one: also
    through an operator on ``error`` or ``error_type`` (``error_type_any_of``)."""
    return (
        any(operator.name in expect for operator in _ERROR_OPERATORS)
        or expect.get("error_type") is not None
        or expect.get("error") is not None
        or any(
            type(key) is str and key != _base_of(key) and _base_of(key) in ("error", "error_type")
            for key in expect
        )
    )


_RAISE_KEYS = REJECTION_KEYS | HEALTH_KEYS | {"error"}
"""Keys an exception is compared with rather than errored: what it says (``rejects``,
``error``, ``error_type``, ``error_includes``) and how the case ended."""


def asks_about_a_raise(expect: Mapping[str, Any]) -> bool:
    """Whether an exception the implementation raised is compared with ``expect``
    rather than errored: it has a key of :data:`_RAISE_KEYS`, or an operator on one
    (``error_type_any_of = ["ValueError", "TypeError"]``)."""
    return any(type(key) is str and _base_of(key) in _RAISE_KEYS for key in expect)


def _raised(outcome: Outcome) -> str:
    return f"{outcome.error_type}: {_short(outcome.error_message, 300)}"


def _plain(value: Any) -> str:
    return value if type(value) is str else format_value(value)


MEMORY_KEY = "resident_memory_mb"
RUNNER_MEASURED = frozenset({"elapsed_ms", MEMORY_KEY})
"""The measurements the runner makes itself."""

RUNNER_OWNED = ("elapsed_ms", MEMORY_KEY, "crashed", "hung", "rejects")
"""What only the runner observes: its measurements, and how the case ended (whether the
implementation returned, raised, crashed or hung). An observation carrying one of these
names, or an operator on one (``elapsed_ms_max``), is the implementation speaking for
the runner: the case is errored, and nothing of it is compared."""

_OWNED_NAMES = frozenset(
    name
    for base in RUNNER_OWNED
    for name in (
        base,
        *(f"{base}{operator.name}" for operator in OPERATORS.values() if operator.suffix),
    )
)
"""Every name of an observation that speaks for the runner: a runner-owned key, and
each suffix operator of :data:`~cer.judge.compare.OPERATORS` spelled on one (a new
operator is covered as soon as the table has it)."""


def owned_reason(keys: list[str]) -> str:
    """The reason of a case whose observation carries keys only the runner supplies."""
    named = ", ".join(f"`{key}`" for key in keys[:10])
    more = f" (and {len(keys) - 10} more)" if len(keys) > 10 else ""
    return (
        f"the implementation reported {named}{more}, which only the runner observes: "
        f"{', '.join(RUNNER_OWNED)} and the operators on them are the runner's own "
        "observations, so the case was not compared"
    )


def asks_memory(expect: Mapping[str, Any]) -> bool:
    """Whether ``expect`` asks about ``resident_memory_mb``: as a value, or through any
    suffix operator of :data:`~cer.judge.compare.OPERATORS` on it (a bound,
    ``resident_memory_mb_any_of``): each compares the runner's measurement."""
    return any(type(key) is str and _base_of(key) == MEMORY_KEY for key in expect)


_MEASUREMENT_UNITS = frozenset({"ms", "us", "ns", "seconds", "kb", "mb", "gb", "kib", "mib", "gib"})
"""Last words of the name of a measurement of time or memory (:func:`named_as_measurement`)."""


def named_as_measurement(base: str) -> bool:
    """Whether a key's name ends in a unit of time or memory after another word
    (:func:`name_words`): ``first_render_ms``, ``first_render_MS``, ``firstRenderMs``
    and ``render_ｍs`` alike, but not ``ms`` alone nor ``items``."""
    words = name_words(base)
    return len(words) > 1 and words[-1] in _MEASUREMENT_UNITS


_MEASURED_WORDS = frozenset(
    {
        # what is measured
        "time", "times", "elapsed", "duration", "durations", "latency", "latencies",
        "runtime", "memory", "mem", "rss",
        # its units
        "ms", "us", "ns", "s", "sec", "secs", "second", "seconds", "millis", "micros",
        "nanos", "bytes", "kb", "mb", "gb", "kib", "mib", "gib",
    }
)  # fmt: skip
"""Words of a key's name that make it read like a measurement of time or memory."""

_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W_]+")
"""One word of a key's name: names split at ``_`` (or any other non-word character)
and at camelCase boundaries (``parseTimeMs``, ``HTTPLatency``)."""


def name_words(name: str) -> list[str]:
    """The words of a key's name, lower-cased: ``parse_time_ms`` and ``parseTimeMs``
    are ``parse``, ``time``, ``ms``; ``timeout_count`` is ``timeout``, ``count``. The
    name is read as it looks (:func:`looks_as`): a full-width ``ｍｓ`` is ``ms``, and
    an invisible character splits no word."""
    return [word.lower() for word in _NAME_WORD.findall(looks_as(name))]


def looks_as(name: str) -> str:
    """``name`` as it reads: compatibility characters replaced by the ones they look
    like (NFKC: ``ｍ`` is ``m``) and invisible format characters (a zero-width space, a
    direction mark) removed."""
    normal = unicodedata.normalize("NFKC", name)
    if normal.isascii():
        return normal
    return "".join(ch for ch in normal if unicodedata.category(ch) != "Cf")


def reads_as_runner_key(name: str) -> str | None:
    """The runner-observed key ``name`` reads as when it is spelled otherwise (in other
    case, without its underscores, with lookalike or invisible characters:
    ``Elapsed_MS``, ``elapsedMs``, ``elapsed_ｍs``), or None."""
    key = _OBSERVED_SQUASHED.get(_squash(name))
    return key if key != name else None


def _squash(name: str) -> str:
    return looks_as(name).replace("_", "").replace("-", "").casefold()


_OBSERVED_SQUASHED: dict[str, str] = {_squash(key): key for key in RUNNER_OBSERVED_KEYS}
"""Each runner-observed key by how it reads (:func:`_squash`); no two read alike."""


def looks_measured(base: str) -> bool:
    """Whether a key's name reads like a measurement of time or memory: one of its
    words (:func:`name_words`) is a measurement or a unit (``latency``,
    ``parse_duration_s``, ``peak_bytes``, ``parseTimeMs``). Compared as the
    implementation reported it, its outcome is the implementation's word about itself,
    and says so wherever shown. Whole words only: ``timeout_count`` and ``timestamp``
    measure nothing."""
    return any(word in _MEASURED_WORDS for word in name_words(base))


REPORTED_NOTE = "is reported by the implementation, not measured by cer"
"""What is said of a compared key that only looks like a measurement of the runner's."""


def _looked_at(expect: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Each key of ``expect`` that compares something of the observation, with the
    observation key it looks at: a literal key itself, a suffix operator its base
    (``count_max``: ``count``). Whole-name operators (``error_includes``,
    ``has_fields``) and declarations look at no key of their own name."""
    for key in expect:
        if type(key) is not str:
            continue
        found = operator_of(key)
        if found is None:
            yield key, key
        elif found[0].suffix:
            yield key, found[1]


def declared_self_reported(expect: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys ``expect`` declares the implementation's own figures
    (``self_reported = ["count"]``): every string it lists, in order."""
    value = expect.get(SELF_REPORTED) if SELF_REPORTED in expect else None
    if type(value) is not list:
        return ()
    return tuple(dict.fromkeys(name for name in value if type(name) is str and name))


def declaration_problems(expect: Mapping[str, Any]) -> list[str]:
    """What is wrong with the case's ``self_reported`` declaration, if it has one: it
    must be a non-empty array of key names, each a key the case compares (as a value or
    through an operator) and none a key the runner observes itself."""
    if SELF_REPORTED not in expect:
        return []
    value = expect[SELF_REPORTED]
    if type(value) is not list or not value or not all(type(v) is str and v for v in value):
        return [
            f"{SELF_REPORTED} must be a non-empty array of the names of keys whose values "
            f"are the implementation's own figures, but expect gives {describe(value)}"
        ]
    looked_at = dict.fromkeys(base for _, base in _looked_at(expect))
    problems: list[str] = []
    for name in dict.fromkeys(value):
        if name in RUNNER_OBSERVED_KEYS:
            problems.append(
                f"{SELF_REPORTED} names {name}, which only the runner observes; a value the "
                "implementation reports for it is never taken"
            )
        elif (lookalike := reads_as_runner_key(name)) is not None:
            problems.append(
                f"{SELF_REPORTED} names {format_value(name)}, which reads as {lookalike}, a "
                "key only the runner observes; the implementation's own figure cannot go "
                "by a name that reads as the runner's"
            )
        elif name not in looked_at:
            compared = ", ".join(looked_at) or "nothing"
            problems.append(
                f"{SELF_REPORTED} names {name!r}, which the case's expect does not compare "
                f"(it compares {compared})"
            )
    return problems


def reported_measurements(expect: Mapping[str, Any]) -> list[str]:
    """The keys ``expect`` compares (as a value or through an operator) whose values are
    the implementation's own word about itself: those it declares ``self_reported``, and
    those whose names look like measurements (:func:`looks_measured`) the runner does
    not make, beside those :func:`unmeasured_keys` errors."""
    unmeasured = unmeasured_keys(expect)
    declared = declared_self_reported(expect)
    found: list[str] = []
    for key, base in _looked_at(expect):
        if base in _OWNED_BASES or key in unmeasured:
            continue
        if base not in declared and not looks_measured(base):
            continue
        if base not in found:
            found.append(base)
    return found


def reported_note(keys: tuple[str, ...] | list[str]) -> str:
    """The line a result carries for the measurement-like keys it compared."""
    return "; ".join(f"{key} {REPORTED_NOTE}" for key in keys)


_OWNED_BASES = frozenset({*RUNNER_OWNED, "error", "error_type"})


def unmeasured_keys(expect: Mapping[str, Any]) -> list[str]:
    """The keys of ``expect`` that ask about a number the runner does not measure, unless
    the case declares it the implementation's own (``self_reported``): every bound
    (``count_max``, ``first_render_ms_min``) on a key other than ``elapsed_ms`` and
    ``resident_memory_mb``, and every key and operator on a key named as a measurement
    of time or memory (``first_render_ms``, ``binary_size_mb_contains``). A value the
    implementation reports about itself is no evidence of it, so such a case cannot be
    verified; a count it returns is no different to the runner from a footprint it
    claims, so the rule holds for every bound."""
    declared = declared_self_reported(expect)
    found: list[str] = []
    for key, base in _looked_at(expect):
        if base in RUNNER_MEASURED or (base in declared and base not in _OWNED_BASES):
            continue
        found_operator = operator_of(key)
        bound = found_operator is not None and found_operator[0].bound is not None
        if bound or (base not in _OWNED_BASES and named_as_measurement(base)):
            found.append(key)
    return found


@dataclass(frozen=True)
class _KeyFacts:
    """What the verdict needs to know of an expect table's keys alone."""

    unmeasured: tuple[str, ...]
    memory: bool
    reported: tuple[str, ...]
    lookalikes: tuple[str, ...]
    operators: bool
    """Some key is an operator: no shortcut of :func:`_surely_matches` applies."""


_KEY_FACTS: dict[tuple[Any, ...], _KeyFacts] = {}
""":func:`unmeasured_keys`, :func:`asks_memory`, :func:`reported_measurements`,
:func:`lookalike_problems` and whether any key is an operator, by the keys of an expect
table (they depend on nothing else, unless it declares ``self_reported``): most cases
of a suite share a handful of key sets."""
_KEY_FACTS_MAX = 4096


def key_facts(expect: Mapping[str, Any]) -> tuple[tuple[str, ...], bool]:
    """:func:`unmeasured_keys` of ``expect`` and :func:`asks_memory`, remembered by its
    keys."""
    facts = _facts(expect)
    return facts.unmeasured, facts.memory


def reported_facts(expect: Mapping[str, Any]) -> tuple[str, ...]:
    """:func:`reported_measurements` of ``expect``, remembered by its keys."""
    return _facts(expect).reported


def _facts(expect: Mapping[str, Any]) -> _KeyFacts:
    keys = tuple(expect)
    declares = SELF_REPORTED in expect  # then the facts depend on what it declares
    facts = None if declares else _KEY_FACTS.get(keys)
    if facts is None:
        if len(_KEY_FACTS) >= _KEY_FACTS_MAX:
            _KEY_FACTS.clear()
        facts = _KeyFacts(
            tuple(unmeasured_keys(expect)),
            asks_memory(expect),
            tuple(reported_measurements(expect)),
            tuple(lookalike_problems(expect)),
            any(is_operator_key(key) for key in keys),
        )
        if not declares:
            _KEY_FACTS[keys] = facts
    return facts


def vacuous_expectations(expect: Mapping[str, Any]) -> list[str]:
    """What of ``expect`` holds whatever is observed, so that it cannot verify anything:
    ``has_fields = []``, ``error_includes = ""``, a bound every number meets
    (``K_max = inf``, ``K_min = -inf``) or every measurement of the runner meets
    (``elapsed_ms_min = 0``), an ``K_any_of`` of no value. Each as ``key: why``; see
    docs/execution-model.md."""
    found: list[str] = []
    for key, value in expect.items():
        operator = operator_of(key) if type(key) is str else None
        if operator is not None and operator[0].vacuous is not None:
            why = operator[0].vacuous(key, operator[1], value)
            if why:
                found.append(why)
    return found


def contradictions(expect: Mapping[str, Any]) -> list[str]:
    """What of ``expect`` no outcome can meet: ``rejects = false`` (a return) beside a
    key that asks for an error (``error_includes``, ``error_type``, ``error``), which
    only a rejection has."""
    if expect.get("rejects") is not False:
        return []
    asking = [
        key
        for key in (*(operator.name for operator in _ERROR_OPERATORS), "error_type", "error")
        if key in expect and expect[key] is not None
    ]
    if not asking:
        return []
    return [
        f"rejects = false asks for a return, and {', '.join(asking)} for a rejection; no "
        "outcome meets both, so the case can never pass"
    ]


_SPOKEN_FOR: frozenset[str] = frozenset(
    {
        *RUNNER_OBSERVED_KEYS,
        *(name for name, operator in OPERATORS.items() if not operator.suffix),
        *(
            f"{key}{operator.name}"
            for key in RUNNER_OBSERVED_KEYS
            for operator in OPERATORS.values()
            if operator.suffix
        ),
    }
)
"""The keys of an expect table whose meaning is the runner's: a runner-observed key, an
operator named whole, an operator on a runner-observed key (``elapsed_ms_max``)."""

_WHOLE_NAMES = frozenset(name for name, operator in OPERATORS.items() if not operator.suffix)
"""The operators named whole (``error_includes``, ``has_fields``, ``self_reported``)."""

_SPOKEN_FOR_SQUASHED: dict[str, str] = {_squash(name): name for name in sorted(_SPOKEN_FOR)}


def lookalike_problems(expect: Mapping[str, Any]) -> list[str]:
    """Each key of ``expect`` that reads as one of the runner's (:data:`_SPOKEN_FOR`)
    without being it: in other case, without its underscores, with lookalike or
    invisible characters (``Rejects``, ``errorIncludes``, ``Elapsed_MS_Max``), or a
    suffix operator on an operator named whole (``error_includes_any_of``). Such a key
    asks about a literal value the implementation reports, which a report would show
    as though the runner had observed it (``Rejects = true`` passing for a function
    that returned ``{"Rejects": true}``)."""
    found: list[str] = []
    for key in expect:
        if type(key) is not str or key in _SPOKEN_FOR:
            continue
        operator = operator_of(key)
        if operator is not None and operator[0].suffix and operator[1] in _WHOLE_NAMES:
            found.append(
                f"{key} applies {operator[0].name} to {operator[1]}, which is an operator of "
                "expect, not a key of the observation: the implementation would answer it "
                "with a key of that name"
            )
            continue
        meant = _SPOKEN_FOR_SQUASHED.get(_squash(key))
        if meant is not None:
            found.append(
                f"{format_value(key)} reads as {meant}, but is a literal key the "
                f"implementation reports; spell it {meant} to ask the runner"
            )
    return found


def vacuous_reason(expect: Mapping[str, Any]) -> str | None:
    """The reason of a case whose expect table cannot verify anything whatever the
    implementation does: it holds something that verifies nothing
    (:func:`vacuous_expectations`), a malformed ``self_reported`` declaration
    (:func:`declaration_problems`), a key that reads as one of the runner's without
    being it (:func:`lookalike_problems`), or a contradiction (:func:`contradictions`);
    or None."""
    facts = _facts(expect)
    if not facts.operators and not facts.lookalikes and expect.get("rejects") is not False:
        # No operator (so nothing vacuous and no declaration), no lookalike key, and no
        # rejects = false to contradict: the common case, known from its keys alone.
        return None
    found = vacuous_expectations(expect)
    reasons = [f"could not verify: {'; '.join(found)}, so it verifies nothing"] if found else []
    reasons.extend(f"could not verify: {why}" for why in unmeetable_problems(expect))
    return "\n".join(reasons) or None


def unmeetable_problems(expect: Mapping[str, Any]) -> list[str]:
    """What errors a case whatever the implementation does, beside what verifies
    nothing: a malformed ``self_reported`` declaration (:func:`declaration_problems`),
    a key that reads as one of the runner's without being it
    (:func:`lookalike_problems`), a contradiction (:func:`contradictions`). One list,
    so that the verdict (:func:`vacuous_reason`) and ``cer check`` apply the same rule."""
    return [*declaration_problems(expect), *_facts(expect).lookalikes, *contradictions(expect)]


def unmeasured_reason(keys: list[str]) -> str:
    """The reason of a case that asks about numbers the runner does not measure
    (:func:`unmeasured_keys`): it names each key, what the runner does measure, and how
    a suite says that it means the implementation's own figure."""
    bases = list(dict.fromkeys(_base_of(key) for key in keys))
    named = ", ".join(keys)
    what = "it" if keys == bases else (bases[0] if len(bases) == 1 else " or ".join(bases))
    if len(bases) > 1 and keys == bases:
        what = "them"
    reason = (
        f"could not verify {named}: the runner does not measure {what} (it measures "
        f"only {' and '.join(sorted(RUNNER_MEASURED))}), and a value the implementation "
        "reports about itself is not evidence"
    )
    declarable = [base for base in bases if base not in _OWNED_BASES]
    if declarable:
        listed = ", ".join(f'"{base}"' for base in declarable)
        reason += (
            "; if the suite means the figure the implementation reports, it says so in "
            f"the case's expect: {SELF_REPORTED} = [{listed}]"
        )
    return reason


def _base_of(key: str) -> str:
    found = operator_of(key)
    return found[1] if found is not None and found[0].suffix else key


_str, _int, _bool, _float, _list, _dict, _NoneType = str, int, bool, float, list, dict, type(None)
_EXACT_SCALARS = frozenset({_str, _int, _bool, _NoneType})


def _surely_matches(expect: Mapping[str, Any], observation: Mapping[str, Any]) -> bool:
    """Whether every expected key was observed with a strictly equal value.

    A shortcut for the common passing case, taken only for an expect table without an
    operator key (an operator is applied, not compared, when the key it looks at was
    reported: :func:`~cer.judge.compare.literal_applies`): True only where
    :func:`compare` would find no mismatch (each key present and equal under its
    rules: exact types at every level, floats equal or both NaN, tables with the same
    string keys). Anything else, including every value of another type, answers False
    and is left to :func:`compare`, which also explains the differences.
    """
    try:
        for key, expected in expect.items():
            if type(key) is not _str or key not in observation:
                return False
            if not _same(expected, observation[key]):
                return False
    except RecursionError:
        return False
    return True


def _same(a: Any, b: Any) -> bool:
    kind = type(a)
    if type(b) is not kind:
        return False
    if kind in _EXACT_SCALARS:
        return bool(a == b)
    if kind is _float:
        return bool(a == b or (a != a and b != b))
    if kind is _list:
        return len(a) == len(b) and all(map(_same, a, b))
    if kind is _dict:
        if len(a) != len(b):
            return False
        for key, value in a.items():
            if type(key) is not _str or key not in b or not _same(value, b[key]):
                return False
        return True
    return False


def _with_detail(result: CaseResult, detail: str) -> CaseResult:
    if result.status is Status.PASS:
        return result
    from dataclasses import replace

    return replace(result, reason=f"{detail}\n{result.reason}")


def skipped(case: Case, reason: str) -> CaseResult:
    """The result of a case the runner did not run (deselected, in another shard, a
    category it cannot run): a decision about the run, not about the implementation."""
    return CaseResult(
        case_name=case.name,
        case_class=case.case_class,
        category=case.category,
        status=Status.SKIPPED,
        reason=reason,
        position=case.position,
    )


def errored(
    case: Case,
    reason: str,
    *,
    fail_class: FailClass,
    traceback: str | None = None,
    stdout: str = "",
    stderr: str = "",
) -> CaseResult:
    """The result of a case the runner could not verify, with the reason and its class
    (``not_run``, ``unverifiable``, ``lost``, ...): its own machinery failed, or what
    the case asks cannot be observed. Never a pass."""
    return CaseResult(
        case_name=case.name,
        case_class=case.case_class,
        category=case.category,
        status=Status.ERRORED,
        reason=reason,
        traceback=traceback,
        stdout=stdout,
        stderr=stderr,
        position=case.position,
        fail_class=fail_class,
    )
