"""The messages of the command protocol (docs/protocol.md): requests built here,
every line from the command parsed and checked strictly, and a ``result`` turned into
an :class:`~cer.judge.verdict.Outcome`, never into a status."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cer.engine.command.values import (
    ProtocolError,
    clip,
    decode_value,
    encode_value,
    snippet,
)
from cer.judge.verdict import Outcome

if TYPE_CHECKING:
    from cer.engine.plan import Planned


PROTOCOL_VERSION = 1
"""The version of docs/protocol.md this runner speaks; a harness answering the
``start`` request with any other version is refused. Each per-case request carries it
too, and a per-case command may refuse it (:func:`refusal_of`)."""


MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Longest line (or per-case stdout) accepted from a harness."""


_STDERR_LINES_IN_REASON = 3


_STDERR_CHARS_IN_REASON = 600


_RESULT_BODIES = ("observation", "error", "harness_error")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for key, value in pairs:
        if key in table:
            raise ProtocolError(f"duplicate key {key!r} in a JSON object")
        table[key] = value
    return table


def _no_constant(name: str) -> Any:
    raise ProtocolError(f'{name} is not JSON (send floats as typed values: "nan", "inf")')


def parse_message(data: bytes) -> dict[str, Any]:
    """One JSON object from a harness, parsed strictly (UTF-8, no duplicate keys, no
    NaN/Infinity literals); raises ProtocolError otherwise."""
    try:
        text = data.decode("utf-8")
        parsed = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except ProtocolError:
        raise
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise ProtocolError("JSON nested too deeply") from None
    except ValueError as exc:
        raise ProtocolError(f"not JSON ({exc})") from None
    if type(parsed) is not dict:
        raise ProtocolError(f"expected a JSON object, got {snippet(parsed)}")
    return parsed


def dumps(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def fresh_seq() -> int:
    """The ``seq`` of one request: an unguessable number below 2**53 (exact in every
    JSON reader), so that no answer can be written before its request was sent."""
    return int.from_bytes(os.urandom(7), "big") % (2**53 - 1) + 1


def run_request(seq: int, item: Planned, *, per_case: bool = False) -> bytes:
    """The ``run`` request line for one case; raises NotEncodable for an odd input.

    A per-case request carries the protocol version (``protocol``): a per-case command
    has no ``start`` handshake, so each request offers the version, and the command may
    refuse it (:func:`refusal_of`)."""
    case = item.case
    version = {"protocol": PROTOCOL_VERSION} if per_case else {}
    return dumps(
        {
            "op": "run",
            **version,
            "seq": seq,
            "case": {
                "name": case.name,
                "category": case.category,
                "case_class": case.case_class,
                "tags": list(case.tags),
                "input": encode_value(dict(item.input)),
            },
        }
    )


def start_request(target: str | None) -> bytes:
    return dumps({"op": "start", "protocol": PROTOCOL_VERSION, "target": target})


def outcome_from_result(
    message: Mapping[str, Any], seq: int, *, envelope_optional: bool = False
) -> Outcome:
    """What a ``result`` message says happened; raises ProtocolError when it is malformed.

    ``op`` must be ``"result"`` and ``seq`` must equal ``seq``; with
    ``envelope_optional`` (the per-case protocol) either may be left out.
    """
    allowed = {"op", "seq", *_RESULT_BODIES}
    extra = sorted(set(message) - allowed)
    if extra:
        raise ProtocolError(f"unexpected key {extra[0]!r} in a result")
    if (not envelope_optional or "op" in message) and message.get("op") != "result":
        raise ProtocolError(f'expected op "result", got {snippet(message.get("op"))}')
    if not envelope_optional or "seq" in message:
        got = message.get("seq")
        if type(got) is not int:
            raise ProtocolError(f"seq must be an integer, got {snippet(got)}")
        if got != seq:
            raise ProtocolError(f"the result carries seq {got}, but seq {seq} was asked")
    bodies = [key for key in _RESULT_BODIES if key in message]
    if len(bodies) != 1:
        raise ProtocolError(
            'a result needs exactly one of "observation", "error" and "harness_error"'
        )
    body = message[bodies[0]]
    if bodies[0] == "observation":
        return Outcome("returned", value=decode_value(body))
    if type(body) is not dict:
        raise ProtocolError(f"{bodies[0]} must be a JSON object")
    if bodies[0] == "harness_error":
        if set(body) != {"message"} or type(body["message"]) is not str:
            raise ProtocolError('harness_error needs exactly a string "message"')
        return Outcome("lost", detail=f"the harness could not run this case: {body['message']}")
    extra = sorted(set(body) - {"type", "message", "traceback"})
    if extra:
        raise ProtocolError(f"unexpected key {extra[0]!r} in an error")
    kind, text, trace = body.get("type"), body.get("message"), body.get("traceback")
    if type(kind) is not str or not kind:
        raise ProtocolError('an error needs a non-empty string "type"')
    if type(text) is not str:
        raise ProtocolError('an error needs a string "message"')
    if trace is not None and type(trace) is not str:
        raise ProtocolError('an error\'s "traceback" must be a string')
    return Outcome("raised", error_type=kind, error_message=text, traceback=trace)


def refusal_of(message: Mapping[str, Any], seq: int) -> str | None:
    """What a per-case command's ``refused`` document says, in words, or None when the
    message is no refusal; raises ProtocolError when it is a malformed one.

    ``{"op": "refused", "protocol": N, "reason": "..."}``: the command cannot speak the
    version the request offered; ``protocol`` is the version it speaks, ``reason`` is
    optional, ``seq`` may be left out but if present must be the request's."""
    if message.get("op") != "refused":
        return None
    extra = sorted(set(message) - {"op", "seq", "protocol", "reason"})
    if extra:
        raise ProtocolError(f"unexpected key {extra[0]!r} in a refusal")
    if "seq" in message and (type(message["seq"]) is not int or message["seq"] != seq):
        got = snippet(message.get("seq"))
        raise ProtocolError(f"the refusal carries seq {got}, but seq {seq} was asked")
    speaks, why = message.get("protocol"), message.get("reason", "")
    if type(speaks) is not int:
        raise ProtocolError("a refusal needs the integer protocol version the command speaks")
    if type(why) is not str:
        raise ProtocolError('a refusal\'s "reason" must be a string')
    text = (
        f"the command refused protocol version {PROTOCOL_VERSION}: it speaks version "
        f"{speaks} (docs/protocol.md)"
    )
    return f"{text}: {clip(why)}" if why.strip() else text


def seq_of(message: Mapping[str, Any]) -> int | None:
    seq = message.get("seq")
    return seq if type(seq) is int else None


def line_evidence(line: bytes) -> str:
    return clip(repr(line.decode("utf-8", "replace")))


def stderr_hint(stderr: str) -> str:
    """The last lines of ``stderr``, for a reason that must show its evidence."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    tail = "\n".join(lines[-_STDERR_LINES_IN_REASON:])
    if len(tail) > _STDERR_CHARS_IN_REASON:  # a tail keeps its end
        tail = f"…{tail[-_STDERR_CHARS_IN_REASON:]}"
    return f"; its stderr ends with:\n{tail}"
