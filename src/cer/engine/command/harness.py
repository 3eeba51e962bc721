"""Implementations that are commands rather than Python objects.

``--impl-cmd`` starts the implementation as a long-lived *harness* process that speaks
the line-delimited JSON protocol of docs/protocol.md on its stdin and stdout: a
``start`` handshake, then one ``run`` request per case, each answered by exactly one
``result`` carrying the same sequence number. ``--impl-cmd-per-case`` starts one
process per case instead: the ``run`` request on stdin, the ``result`` on stdout.

Why this file is careful: a harness is foreign code that can crash, hang, print junk,
answer the wrong case or answer twice. None of that may ever turn into a pass. Values
travel with explicit type tags (so ``1``, ``1.0``, ``true`` and ``"1"`` stay
different), every message is checked strictly, every wait is bounded by a deadline
kept here (the harness's process group is SIGKILLed when it passes), and whatever goes
wrong is charged to the case that was running, with the evidence (the bad line, the
tail of stderr). Verdicts are still made only by :func:`cer.verdict.judge`: this module
builds :class:`~cer.verdict.Outcome` values, and uses ``errored`` only for failures
of the runner's own machinery (the harness cannot be started or restarted).

The command is split like a shell splits words (``shlex.split``) and is never run
through a shell. It runs in the runner's working directory, so relative paths in the
command mean what they mean where ``cer`` was started; fixture paths in case inputs
are absolute.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import errno
import hashlib
import json
import math
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cer import sandbox
from cer.categories import CALL
from cer.engine.execution import Execution
from cer.engine.identity import file_digest
from cer.events import ImplementationFailed, ImplementationLoaded
from cer.procs import end_process
from cer.verdict import Outcome, errored, judge, skipped

if TYPE_CHECKING:
    from cer.engine.plan import Planned

PROTOCOL_VERSION = 1
"""The version of docs/protocol.md this runner speaks; a harness answering the
``start`` request with any other version is refused."""

START_TIMEOUT_MIN = 10.0
"""Floor, in seconds, of the time a harness gets to answer ``start`` (the per-case
timeout applies when it is longer): starting an interpreter can be slower than a case."""

STOP_GRACE = 1.0
"""How long a harness gets to exit after ``stop`` before its process group is killed."""

RESTART_BUDGET = 3
"""Restarts allowed after consecutive failed cases (crash, timeout, protocol violation)
with no case answered in between; past it the remaining cases are errored."""

RESTART_LIMIT = 25
"""Restarts allowed in a whole run, however they are spread."""

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Longest line (or per-case stdout) accepted from a harness."""

MAX_DEPTH = 100
"""Deepest nesting of typed arrays and tables accepted in an observation."""

MAX_NODES = 2_000_000
"""Most typed values accepted in one observation."""

MAX_INT_DIGITS = 100_000
"""Longest integer text accepted in a typed value."""

_POLL = 0.05
_READ_CHUNK = 1 << 20
_EVIDENCE_CHARS = 300
_STDERR_LINES_IN_REASON = 3
_STDERR_CHARS_IN_REASON = 600
_INT_CHUNK = 4000
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_FLOAT_NAMES: Mapping[str, float] = {
    "nan": math.nan,
    "+nan": math.nan,
    "-nan": math.nan,
    "NaN": math.nan,
    "inf": math.inf,
    "+inf": math.inf,
    "-inf": -math.inf,
    "Infinity": math.inf,
    "+Infinity": math.inf,
    "-Infinity": -math.inf,
}
_SURROGATE = re.compile("[\ud800-\udfff]")
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = r"[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?"
_ISO_FORMS: Mapping[str, re.Pattern[str]] = {
    "datetime": re.compile(rf"{_DATE}[Tt ]{_TIME}(?:[Zz]|[+-][0-9]{{2}}:[0-9]{{2}})"),
    "datetime-local": re.compile(rf"{_DATE}[Tt ]{_TIME}"),
    "date-local": re.compile(_DATE),
    "time-local": re.compile(_TIME),
}
_RESULT_BODIES = ("observation", "error", "harness_error")


# ----------------------------------------------------------------------- typed values


class ProtocolError(Exception):
    """A message from a harness broke the protocol; the text says where and how."""


class NotEncodable(Exception):
    """A case input holds a value the protocol has no type tag for."""


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _int_text(value: int) -> str:
    """Decimal text of ``value`` at any size (``str`` refuses past 4,300 digits)."""
    if -(10**_INT_CHUNK) < value < 10**_INT_CHUNK:
        return str(value)
    sign, value = ("-", -value) if value < 0 else ("", value)
    parts: list[str] = []
    unit = 10**_INT_CHUNK
    while value:
        value, low = divmod(value, unit)
        parts.append(str(low).zfill(_INT_CHUNK) if value else str(low))
    return sign + "".join(reversed(parts))


def _int_from_text(text: str) -> int:
    """The int spelled by ``text`` (already checked against ``_INT_TEXT``), any size."""
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    value = 0
    for start in range(0, len(digits), _INT_CHUNK):
        chunk = digits[start : start + _INT_CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return sign * value


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def encode_value(value: Any, path: str = "input") -> dict[str, Any]:
    """``value`` as a typed protocol value (docs/protocol.md, "Typed values").

    Types are decided by exact identity (``type(x) is int``) so that ``True`` is never
    sent as an integer; raises NotEncodable for anything else.
    """
    kind = type(value)
    if kind is bool:
        return {"type": "bool", "value": value}
    if kind is int:
        return {"type": "integer", "value": _int_text(value)}
    if kind is float:
        return {"type": "float", "value": _float_text(value)}
    if kind is str:
        return {"type": "string", "value": value}
    if value is None:
        return {"type": "null"}
    if kind is list or kind is tuple:
        return {
            "type": "array",
            "value": [encode_value(item, _child(path, i)) for i, item in enumerate(value)],
        }
    if kind is dict:
        table: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise NotEncodable(f"{path}: a table key of type {type(key).__name__}")
            table[key] = encode_value(item, _child(path, key))
        return {"type": "table", "value": table}
    if kind is _dt.datetime:
        tag = "datetime" if value.tzinfo is not None else "datetime-local"
        return {"type": tag, "value": value.isoformat()}
    if kind is _dt.date:
        return {"type": "date-local", "value": value.isoformat()}
    if kind is _dt.time:
        if value.tzinfo is not None:
            raise NotEncodable(f"{path}: a time of day with a UTC offset")
        return {"type": "time-local", "value": value.isoformat()}
    if kind is bytes:
        return {"type": "bytes", "value": base64.b64encode(value).decode("ascii")}
    raise NotEncodable(f"{path}: a value of type {kind.__name__}")


class _Decoder:
    """Typed protocol values back to plain data, refusing anything ambiguous."""

    def __init__(self) -> None:
        self.nodes = 0

    def value(self, obj: Any, path: str, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ProtocolError(f"{path}: more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise ProtocolError(f"{path}: nested deeper than {MAX_DEPTH} levels")
        if type(obj) is not dict:
            raise ProtocolError(
                f'{path}: expected a typed value {{"type": ..., "value": ...}}, got {_snippet(obj)}'
            )
        tag = obj.get("type")
        if type(tag) is not str:
            raise ProtocolError(f'{path}: a typed value needs a string "type"')
        if tag == "null":
            extra = set(obj) - {"type", "value"}
            if extra or obj.get("value") is not None:
                raise ProtocolError(f'{path}: a null has no value (only "type": "null")')
            return None
        if set(obj) != {"type", "value"}:
            keys = ", ".join(sorted(set(obj) - {"type"})) or "nothing"
            raise ProtocolError(f'{path}: a {tag} needs exactly "type" and "value" (got {keys})')
        item = obj["value"]
        decode = _SCALAR_DECODERS.get(tag)
        if decode is not None:
            return decode(item, path)
        if tag == "array":
            if type(item) is not list:
                raise ProtocolError(f"{path}: an array's value must be a JSON array")
            return [self.value(v, _child(path, i), depth + 1) for i, v in enumerate(item)]
        if tag == "table":
            if type(item) is not dict:
                raise ProtocolError(f"{path}: a table's value must be a JSON object")
            table: dict[str, Any] = {}
            for key, v in item.items():
                _check_text(key, path)
                table[key] = self.value(v, _child(path, key), depth + 1)
            return table
        raise ProtocolError(f"{path}: unknown type {tag!r}")


def _check_text(text: str, path: str) -> str:
    if _SURROGATE.search(text):
        raise ProtocolError(f"{path}: a string holds an unpaired surrogate")
    return text


def _decode_string(item: Any, path: str) -> str:
    if type(item) is not str:
        raise ProtocolError(f"{path}: a string's value must be a JSON string")
    return _check_text(item, path)


def _decode_integer(item: Any, path: str) -> int:
    if type(item) is int:
        return item
    if type(item) is str and len(item) <= MAX_INT_DIGITS + 1 and _INT_TEXT.fullmatch(item):
        return _int_from_text(item)
    raise ProtocolError(
        f"{path}: an integer's value must be decimal digits in a string (or a JSON "
        f"integer), got {_snippet(item)}"
    )


def _decode_float(item: Any, path: str) -> float:
    if type(item) is float:
        return item
    if type(item) is int:
        try:
            return float(item)
        except OverflowError:
            raise ProtocolError(f"{path}: float value out of range") from None
    if type(item) is str:
        if item in _FLOAT_NAMES:
            return _FLOAT_NAMES[item]
        if len(item) <= 1000 and _FLOAT_TEXT.fullmatch(item):
            return float(item)
    raise ProtocolError(
        f"{path}: a float's value must be a JSON number, a decimal string, or one of "
        f'"nan", "inf", "-inf", got {_snippet(item)}'
    )


def _decode_bool(item: Any, path: str) -> bool:
    if type(item) is not bool:
        raise ProtocolError(f"{path}: a bool's value must be true or false")
    return item


def _decode_datetime(item: Any, path: str) -> _dt.datetime:
    return _iso(item, path, "datetime", _dt.datetime.fromisoformat)


def _decode_datetime_local(item: Any, path: str) -> _dt.datetime:
    return _iso(item, path, "datetime-local", _dt.datetime.fromisoformat)


def _decode_date(item: Any, path: str) -> _dt.date:
    return _iso(item, path, "date-local", _dt.date.fromisoformat)


def _decode_time(item: Any, path: str) -> _dt.time:
    return _iso(item, path, "time-local", _dt.time.fromisoformat)


_T = TypeVar("_T")


def _iso(item: Any, path: str, tag: str, parse: Callable[[str], _T]) -> _T:
    """An RFC 3339 form checked against the tag's own pattern (an offset exactly for
    ``datetime``), then parsed."""
    if type(item) is not str or not _ISO_FORMS[tag].fullmatch(item):
        raise ProtocolError(
            f"{path}: a {tag} must be RFC 3339 text"
            + (" with a UTC offset" if tag == "datetime" else " without an offset")
            + f", got {_snippet(item)}"
        )
    try:
        return parse(item.upper() if tag.startswith("datetime") else item)
    except ValueError as exc:
        raise ProtocolError(f"{path}: {exc}") from None


def _decode_bytes(item: Any, path: str) -> bytes:
    if type(item) is not str:
        raise ProtocolError(f"{path}: bytes must be a base64 string")
    try:
        return base64.b64decode(item.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ProtocolError(f"{path}: bytes must be a base64 string") from None


_SCALAR_DECODERS: Mapping[str, Callable[[Any, str], Any]] = {
    "string": _decode_string,
    "integer": _decode_integer,
    "float": _decode_float,
    "bool": _decode_bool,
    "datetime": _decode_datetime,
    "datetime-local": _decode_datetime_local,
    "date-local": _decode_date,
    "time-local": _decode_time,
    "bytes": _decode_bytes,
}


def decode_value(obj: Any, path: str = "observation") -> Any:
    """A typed protocol value as plain data; raises ProtocolError on anything malformed."""
    return _Decoder().value(obj, path, 0)


# ----------------------------------------------------------------------------- messages


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
        raise ProtocolError(f"expected a JSON object, got {_snippet(parsed)}")
    return parsed


def _dumps(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def fresh_seq() -> int:
    """The ``seq`` of one request: an unguessable number below 2**53 (exact in every
    JSON reader), so that no answer can be written before its request was sent."""
    return int.from_bytes(os.urandom(7), "big") % (2**53 - 1) + 1


def run_request(seq: int, item: Planned) -> bytes:
    """The ``run`` request line for one case; raises NotEncodable for an odd input."""
    case = item.case
    return _dumps(
        {
            "op": "run",
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


def _start_request(target: str | None) -> bytes:
    return _dumps({"op": "start", "protocol": PROTOCOL_VERSION, "target": target})


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
        raise ProtocolError(f'expected op "result", got {_snippet(message.get("op"))}')
    if not envelope_optional or "seq" in message:
        got = message.get("seq")
        if type(got) is not int:
            raise ProtocolError(f"seq must be an integer, got {_snippet(got)}")
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


def _seq_of(message: Mapping[str, Any]) -> int | None:
    seq = message.get("seq")
    return seq if type(seq) is int else None


def _snippet(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return _clip(text)


def _clip(text: str, limit: int = _EVIDENCE_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def _line_evidence(line: bytes) -> str:
    return _clip(repr(line.decode("utf-8", "replace")))


def _stderr_hint(stderr: str) -> str:
    """The last lines of ``stderr``, for a reason that must show its evidence."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    tail = "\n".join(lines[-_STDERR_LINES_IN_REASON:])
    if len(tail) > _STDERR_CHARS_IN_REASON:  # a tail keeps its end
        tail = f"…{tail[-_STDERR_CHARS_IN_REASON:]}"
    return f"; its stderr ends with:\n{tail}"


# ------------------------------------------------------------------------------ process


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "closed its stdout"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"


class _Process:
    """One harness process: its own session, piped stdin/stdout/stderr, bounded waits.

    Not thread-safe; the run's thread owns it. stdout is split into lines; stderr is
    drained continuously (so a flood never blocks the harness) into a capture that
    keeps the last ``capture_limit`` bytes.
    """

    def __init__(
        self,
        words: list[str],
        capture_limit: int,
        policy: sandbox.Policy | None = None,
        abi: int = 0,
    ) -> None:
        env = None
        if policy is not None:
            # Started through the sandbox's launcher, which confines itself and then
            # becomes the command: nothing of the command ever runs unconfined.
            program = words[0]
            if shutil.which(program) is None:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
            words = sandbox.launcher_command(policy, words, abi)
            env = {**os.environ, **policy.environment()}
        self.popen = subprocess.Popen(
            words,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,
            env=env,
        )
        assert self.popen.stdin and self.popen.stdout and self.popen.stderr
        self._in: int | None = self.popen.stdin.fileno()
        self._out = self.popen.stdout.fileno()
        self._err = self.popen.stderr.fileno()
        os.set_blocking(self._in, False)
        self._outbound = bytearray()
        self._close_when_sent = False
        self._stdout = bytearray()
        self._scan = 0
        self.stdout_open = True
        self.stderr_open = True
        self._capture = bytearray()
        self._dropped = 0
        self._limit = max(1024, capture_limit)
        self.closed = False

    # writing

    def send(self, data: bytes, *, then_close: bool = False) -> None:
        """Queue ``data`` for the harness's stdin; it is written while waiting."""
        if self._in is not None:
            self._outbound += data
        self._close_when_sent = self._close_when_sent or then_close
        self._write()

    def _write(self) -> None:
        if self._in is None:
            return
        while self._outbound:
            try:
                written = os.write(self._in, self._outbound[:65536])
            except BlockingIOError:
                return
            except OSError:  # the harness closed its stdin or ended
                self._outbound.clear()
                self._close_stdin()
                return
            del self._outbound[:written]
        if self._close_when_sent:
            self._close_stdin()

    def _close_stdin(self) -> None:
        if self._in is not None:
            self._in = None
            with contextlib.suppress(OSError):
                assert self.popen.stdin is not None
                self.popen.stdin.close()

    # reading

    def _pump(self, timeout: float) -> None:
        readers = [
            fd
            for fd, is_open in ((self._out, self.stdout_open), (self._err, self.stderr_open))
            if is_open
        ]
        writers = [self._in] if self._in is not None and self._outbound else []
        if not readers and not writers:  # both pipes closed: wait for the exit itself
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=timeout)
            return
        ready_r, ready_w, _ = select.select(readers, writers, [], timeout)
        for fd in ready_r:
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except OSError:
                chunk = b""
            if fd == self._out:
                if chunk:
                    self._stdout += chunk
                else:
                    self.stdout_open = False
            elif chunk:
                self._keep_stderr(chunk)
            else:
                self.stderr_open = False
        if ready_w:
            self._write()

    def _keep_stderr(self, chunk: bytes) -> None:
        self._capture += chunk
        excess = len(self._capture) - self._limit
        if excess > 0:
            del self._capture[:excess]
            self._dropped += excess

    def _take_line(self) -> bytes | None:
        end = self._stdout.find(b"\n", self._scan)
        if end < 0:
            self._scan = len(self._stdout)
            return None
        line = bytes(self._stdout[:end])
        del self._stdout[: end + 1]
        self._scan = 0
        return line

    def next_line(self, deadline: float, check: Callable[[], None]) -> tuple[str, bytes]:
        """Wait for the next stdout line until ``deadline`` (a monotonic time).

        Returns ``("line", line)``, ``("eof", partial)`` when stdout closed,
        ``("timeout", b"")`` or ``("too_long", head)``. ``check`` runs between slices
        of at most 50 ms (it raises to cancel the run).
        """
        while True:
            line = self._take_line()
            if line is not None:
                return "line", line
            if len(self._stdout) > MAX_MESSAGE_BYTES:
                return "too_long", bytes(self._stdout[:_EVIDENCE_CHARS])
            if not self.stdout_open:
                return "eof", bytes(self._stdout)
            check()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", b""
            self._pump(min(remaining, _POLL))

    def read_to_end(self, deadline: float, check: Callable[[], None]) -> tuple[str, bytes]:
        """Everything the process writes to stdout until it closes it and exits.

        Returns ``("done", stdout)``, ``("timeout", stdout)`` or ``("too_long", head)``.
        """
        while True:
            if len(self._stdout) > MAX_MESSAGE_BYTES:
                return "too_long", bytes(self._stdout[:_EVIDENCE_CHARS])
            if not self.stdout_open and self.popen.poll() is not None:
                self.drain_stderr(0.2)
                return "done", bytes(self._stdout)
            check()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", bytes(self._stdout)
            self._pump(min(remaining, _POLL))

    def drain_stderr(self, wait: float = 0.0) -> None:
        """Read what stderr holds now, waiting up to ``wait`` s for it to close."""
        until = time.monotonic() + wait
        while self.stderr_open:
            ready, _, _ = select.select([self._err], [], [], max(0.0, until - time.monotonic()))
            if not ready:
                return
            try:
                chunk = os.read(self._err, _READ_CHUNK)
            except OSError:
                chunk = b""
            if chunk:
                self._keep_stderr(chunk)
            else:
                self.stderr_open = False

    def take_stderr(self) -> str:
        """What stderr captured since the last call (its tail, when it overflowed)."""
        self.drain_stderr()
        text = self._capture.decode("utf-8", "replace")
        if self._dropped:
            text = f"[{self._dropped} earlier bytes of stderr dropped]\n{text}"
        self._capture.clear()
        self._dropped = 0
        return text

    # ending

    def exit_code(self, wait: float) -> int | None:
        """The exit status (negative: killed by that signal), or None if still running."""
        try:
            return self.popen.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL the harness, everything below it and its process group; reap it."""
        if self.closed:
            return
        self.closed = True
        end_process(self.popen)
        self.drain_stderr(0.2)  # what it wrote before it died is evidence
        self._in = None
        self.stdout_open = self.stderr_open = False
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


# ----------------------------------------------------------------------- identification


def _hash_file(digest: Any, path: Path) -> None:
    # A harness names some of these files: a name it swaps for a FIFO after the
    # is_file check must not stall the supervisor (see cer.identity.file_digest).
    digest.update(file_digest(str(path)))


def _on_search_path(program: str) -> bool:
    folder = os.path.dirname(os.path.abspath(program))
    return any(
        os.path.abspath(entry) == folder
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry
    )


def command_identity(
    kind: str, words: list[str], extra_files: Iterable[str] = (), extra: Iterable[str] = ()
) -> tuple[str, tuple[str, ...]]:
    """A stable implementation id and the files it depends on.

    The id is ``cmd:COMMAND@HASH`` (``cmd-per-case:`` for one process per case); the
    hash covers the command's words, the content of every word that names an existing
    file (relative to the working directory; the program only when it is not in a PATH
    directory; files over 256 MiB by size and time), the files a harness listed in its
    handshake, and ``extra`` (the harness's name and version), so that editing the
    harness or the module it wraps changes the id.
    """
    digest = hashlib.sha256()
    files: list[str] = []
    for word in words:
        digest.update(f"{len(word)}:{word}".encode("utf-8", "surrogateescape"))
    # The program itself counts unless it lives in a PATH directory (an interpreter
    # such as /usr/bin/node is not the implementation; ./build/impl is).
    named = words[1:] if words and _on_search_path(words[0]) else words
    for name in [*named, *extra_files]:
        path = Path(name)
        with contextlib.suppress(OSError, ValueError):
            if path.is_file():
                resolved = str(path.resolve())
                if resolved not in files:
                    files.append(resolved)
    for name in sorted(files):
        digest.update(name.encode("utf-8", "surrogateescape"))
        _hash_file(digest, Path(name))
    for text in extra:
        digest.update(f"{len(text)}:{text}".encode("utf-8", "surrogatepass"))
    prefix = "cmd" if kind == "command" else "cmd-per-case"
    return f"{prefix}:{shlex.join(words)}@{digest.hexdigest()[:10]}", tuple(files)


# ----------------------------------------------------------------------------- entry


class CommandExecution(Execution):
    """The backend of a command implementation: a long-lived harness (``command``) or
    one process per case (``command-per-case``). Each driver ends its own processes
    before :meth:`run` returns, so there is nothing left to stop or kill after it."""

    def run(self, planned: list[Planned]) -> None:
        if planned:
            execute(self, planned)

    def stop(self) -> None:
        pass

    def kill(self) -> None:
        pass


def execute(execution: Execution, planned: list[Planned]) -> None:
    """Run ``planned`` cases against the command in ``execution.options``.

    Cases whose category runs through a Python entry-point model are skipped: such a
    model calls the implementation from Python, which a command cannot offer.
    """
    options = execution.options
    try:
        words = shlex.split(options.impl)
    except ValueError as exc:
        words, problem = [], f"cannot split the command {options.impl!r}: {exc}"
    else:
        problem = "" if words else "the implementation command is empty"
    execution.implementation_id, _ = command_identity(options.kind, words)
    runnable: list[Planned] = []
    for item in planned:
        if item.model != CALL:
            execution.record(
                skipped(
                    item.case,
                    f"category not supported by command implementations: {item.case.category} "
                    f"(its execution model {item.model} runs in Python)",
                )
            )
        else:
            runnable.append(item)
    if not runnable:
        return
    if problem:
        _fail_all(execution, runnable, problem, "")
        return
    if options.max_memory is not None:
        execution.notes.append("--max-memory does not apply to command implementations")
    if options.kind == "command":
        _Harness(execution, words).run(runnable)
    else:
        _PerCase(execution, words).run(runnable)


def _fail_all(execution: Execution, items: Iterable[Planned], reason: str, stderr: str) -> None:
    """The implementation could not be started: every case is errored with the reason."""
    note = f"the command implementation {execution.options.impl} could not be started: {reason}"
    execution.notes.append(note)
    execution.emit(ImplementationFailed(reason, stderr))
    for item in items:
        execution.record(errored(item.case, note, stderr=stderr))


# ----------------------------------------------------------------- long-lived harness


@dataclass(frozen=True)
class _Held:
    """A case answered but not yet recorded: recorded once the harness has spoken
    again (or exited), so that a second answer to it can still void the first."""

    item: Planned
    outcome: Outcome
    seq: int
    line: bytes


class _StartFailed(Exception):
    def __init__(self, reason: str, stderr: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stderr = stderr


class _Harness:
    """Drives one run's cases through a long-lived harness, restarting it on failure."""

    def __init__(self, execution: Execution, words: list[str]) -> None:
        self.execution = execution
        self.options = execution.options
        self.words = words
        self.process: _Process | None = None
        self.held: _Held | None = None

    def run(self, planned: list[Planned]) -> None:
        try:
            try:
                info = self.start()
            except _StartFailed as failed:
                _fail_all(self.execution, planned, failed.reason, failed.stderr)
                return
            files = info.get("files", [])
            identity, sources = command_identity(
                self.options.kind,
                self.words,
                files,
                (str(info.get("name")), str(info.get("version"))),
            )
            self.execution.implementation_id = identity
            self.execution.emit(ImplementationLoaded(identity, sources))
            self.loop(deque(planned))
        finally:
            self.kill()

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """Start the harness and shake hands; returns its ``implementation`` table."""
        try:
            process = _Process(
                self.words,
                self.options.capture_limit,
                self.execution.policy,
                self.execution.sandbox.abi,
            )
        except OSError as exc:
            raise _StartFailed(f"cannot run {self.words[0]!r}: {exc.strerror or exc}", "") from None
        self.process = process
        process.send(_start_request(self.execution.suite.target))
        limit = max(START_TIMEOUT_MIN, self.options.timeout)
        kind, line = process.next_line(time.monotonic() + limit, self.execution.check_cancel)
        if kind == "line":
            try:
                return self._check_started(line)
            except ProtocolError as exc:
                self.kill()
                raise _StartFailed(
                    f"{exc} (it answered start with {_line_evidence(line)})", process.take_stderr()
                ) from None
        if kind == "eof":
            code = process.exit_code(0.5)
            process.drain_stderr(0.5)
            stderr = process.take_stderr()
            reason = f"the harness {_describe_exit(code)} before answering start"
            self.kill()
            raise _StartFailed(reason + _stderr_hint(stderr), stderr)
        self.kill()
        stderr = process.take_stderr()
        if kind == "timeout":
            reason = f"the harness did not answer start within {limit:g} s"
        else:
            reason = f"the harness answered start with a line over {MAX_MESSAGE_BYTES} bytes"
        raise _StartFailed(reason + _stderr_hint(stderr), stderr)

    def _check_started(self, line: bytes) -> dict[str, Any]:
        message = parse_message(line)
        if message.get("op") != "started":
            raise ProtocolError('the first message must be {"op": "started", ...}')
        version = message.get("protocol")
        if type(version) is not int:
            raise ProtocolError("started needs an integer protocol version")
        if version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"the harness speaks protocol version {version}; this runner speaks only "
                f"version {PROTOCOL_VERSION} (docs/protocol.md)"
            )
        extra = sorted(set(message) - {"op", "protocol", "implementation"})
        if extra:
            raise ProtocolError(f"unexpected key {extra[0]!r} in started")
        info = message.get("implementation")
        if type(info) is not dict:
            raise ProtocolError("started needs an implementation table")
        for key in ("name", "version"):
            if type(info.get(key)) is not str or not info[key]:
                raise ProtocolError(f"implementation.{key} must be a non-empty string")
        files = info.get("files", [])
        if type(files) is not list or any(type(f) is not str for f in files):
            raise ProtocolError("implementation.files must be an array of strings")
        return info

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process = None

    # --- cases -------------------------------------------------------------------------

    def loop(self, pending: deque[Planned]) -> None:
        consecutive = 0
        restarts = 0
        last_failure = ""
        while pending:
            self.execution.check_cancel()
            if self.process is None:
                if consecutive > RESTART_BUDGET or restarts >= RESTART_LIMIT:
                    why = (
                        f"{consecutive} cases failed in a row"
                        if consecutive > RESTART_BUDGET
                        else f"it was restarted {restarts} times in this run"
                    )
                    self.flush()
                    for item in pending:
                        self.execution.record(
                            errored(
                                item.case,
                                f"not run: the harness was not restarted again ({why}; the "
                                f"last: {last_failure})",
                            )
                        )
                    return
                restarts += 1
                try:
                    self.start()
                except _StartFailed as failed:
                    self.flush()
                    for item in pending:
                        self.execution.record(
                            errored(
                                item.case,
                                f"not run: the harness could not be restarted: {failed.reason}",
                                stderr=failed.stderr,
                            )
                        )
                    return
            item = pending.popleft()
            failure = self.run_case(item, pending)
            if failure is None:
                consecutive = 0
            else:
                consecutive += 1
                last_failure = failure
                self.kill()
        self.stop()

    def run_case(self, item: Planned, pending: deque[Planned]) -> str | None:
        """Send one case and settle it.

        Returns None, or ``"CASE: what went wrong"`` when the harness must be restarted;
        the case is then recorded, or put back in ``pending`` when the failure was an
        earlier case's (answered twice)."""
        process = self.process
        assert process is not None
        seq = fresh_seq()
        try:
            request = run_request(seq, item)
        except NotEncodable as exc:
            self.execution.record(
                errored(
                    item.case, f"the case's input cannot be sent to a command implementation: {exc}"
                )
            )
            return None
        before = process.take_stderr()
        sent = time.monotonic()
        process.send(request)
        kind, line = process.next_line(sent + self.options.timeout, self.execution.check_cancel)
        elapsed_ms = (time.monotonic() - sent) * 1000.0

        def stderr() -> str:
            return before + process.take_stderr()

        if kind == "line":
            try:
                message = parse_message(line)
            except ProtocolError as exc:
                return self.violation(
                    item,
                    f"the harness printed a line that is not a "
                    f"protocol message ({exc}): {_line_evidence(line)}",
                    stderr(),
                    elapsed_ms,
                )
            held = self.held
            if held is not None and _seq_of(message) == held.seq:
                self.held = None
                captured = stderr()
                self.execution.record(
                    judge(
                        held.item.case,
                        replace(
                            held.outcome,
                            kind="lost",
                            detail=f"the harness answered this case twice: first "
                            f"{_line_evidence(held.line)}, then {_line_evidence(line)}",
                        ),
                    )
                )
                pending.appendleft(item)
                return f"{held.item.case.name}: the harness answered it twice" + _stderr_hint(
                    captured
                )
            try:
                outcome = outcome_from_result(message, seq)
            except ProtocolError as exc:
                return self.violation(
                    item,
                    f"the harness broke the protocol ({exc}): {_line_evidence(line)}",
                    stderr(),
                    elapsed_ms,
                )
            self.flush()
            self.held = _Held(
                item, replace(outcome, elapsed_ms=elapsed_ms, stderr=stderr()), seq, line
            )
            return None
        if kind == "eof":
            code = process.exit_code(0.5)
            process.drain_stderr(0.5)
            captured = stderr()
            partial = f" after printing {_line_evidence(line)}" if line else ""
            detail = (
                f"the harness {_describe_exit(code)} while running this case{partial}"
                + _stderr_hint(captured)
            )
            self.flush()
            self.execution.record(
                judge(
                    item.case,
                    Outcome(
                        "crashed",
                        detail=detail,
                        stderr=captured,
                        elapsed_ms=elapsed_ms,
                        seen=code is not None,
                    ),
                )
            )
            return f"{item.case.name}: {detail}"
        if kind == "timeout":
            self.kill()
            assert process.closed
            captured = stderr()
            timeout = self.options.timeout
            detail = f"timed out after {timeout:g} s (the harness was killed)" + _stderr_hint(
                captured
            )
            self.flush()
            self.execution.record(
                judge(
                    item.case,
                    Outcome(
                        "timed_out", detail=detail, stderr=captured, elapsed_ms=timeout * 1000.0
                    ),
                )
            )
            return f"{item.case.name}: {detail}"
        return self.violation(
            item,
            f"the harness printed a line over {MAX_MESSAGE_BYTES} bytes, starting "
            f"{_line_evidence(line)}",
            stderr(),
            elapsed_ms,
        )

    def violation(self, item: Planned, detail: str, stderr: str, elapsed_ms: float) -> str:
        """The harness broke the protocol while ``item`` was running: that case is lost."""
        detail += _stderr_hint(stderr)
        self.flush()
        self.execution.record(
            judge(item.case, Outcome("lost", detail=detail, stderr=stderr, elapsed_ms=elapsed_ms))
        )
        return f"{item.case.name}: {detail}"

    def flush(self) -> None:
        """Record the held case: nothing the harness did since contradicts its answer."""
        held, self.held = self.held, None
        if held is not None:
            self.execution.record(judge(held.item.case, held.outcome))

    def stop(self) -> None:
        """Ask the harness to exit; a last duplicate answer still voids the held case."""
        process = self.process
        if process is None:
            self.flush()
            return
        process.send(_dumps({"op": "stop"}), then_close=True)
        deadline = time.monotonic() + STOP_GRACE
        while True:
            kind, line = process.next_line(deadline, self.execution.check_cancel)
            if kind != "line":
                break
            held = self.held
            with contextlib.suppress(ProtocolError):
                if held is not None and _seq_of(parse_message(line)) == held.seq:
                    self.held = None
                    self.execution.record(
                        judge(
                            held.item.case,
                            replace(
                                held.outcome,
                                kind="lost",
                                detail=f"the harness answered this case twice: first "
                                f"{_line_evidence(held.line)}, then {_line_evidence(line)}",
                            ),
                        )
                    )
        self.flush()
        self.kill()


# ---------------------------------------------------------------------- per-case runs


class _PerCase:
    """Runs each case in a process of its own (``--impl-cmd-per-case``)."""

    def __init__(self, execution: Execution, words: list[str]) -> None:
        self.execution = execution
        self.options = execution.options
        self.words = words

    def run(self, planned: list[Planned]) -> None:
        program = self.words[0]
        found = (
            shutil.which(program)
            if os.sep not in program
            else (program if os.access(program, os.X_OK) and os.path.isfile(program) else None)
        )
        if found is None:
            _fail_all(self.execution, planned, f"cannot run {program!r}: no such executable", "")
            return
        identity, sources = command_identity(self.options.kind, self.words)
        self.execution.implementation_id = identity
        self.execution.emit(ImplementationLoaded(identity, sources))
        for item in planned:
            seq = fresh_seq()
            self.execution.check_cancel()
            try:
                request = run_request(seq, item)
            except NotEncodable as exc:
                self.execution.record(
                    errored(
                        item.case,
                        f"the case's input cannot be sent to a command implementation: {exc}",
                    )
                )
                continue
            try:
                outcome = self.run_one(request, seq)
            except OSError as exc:
                self.execution.record(
                    errored(item.case, f"cannot run {program!r}: {exc.strerror or exc}")
                )
                continue
            finally:
                # What the command left running (a daemon in a session of its own,
                # adopted by cer) ends with its case, before the next case starts.
                self.execution.end_strays()
            self.execution.record(judge(item.case, outcome))

    def run_one(self, request: bytes, seq: int) -> Outcome:
        """Run the command once for one case and say what happened."""
        timeout = self.options.timeout
        started = time.monotonic()
        process = _Process(
            self.words,
            self.options.capture_limit,
            self.execution.policy,
            self.execution.sandbox.abi,
        )
        try:
            process.send(request, then_close=True)
            kind, stdout = process.read_to_end(started + timeout, self.execution.check_cancel)
            elapsed_ms = (time.monotonic() - started) * 1000.0
            if kind == "timeout":
                process.kill()
            code = process.exit_code(0.0) if kind == "done" else None
            stderr = process.take_stderr()
        finally:
            process.kill()
        if kind == "timeout":
            return Outcome(
                "timed_out",
                detail=f"timed out after {timeout:g} s (the process "
                "was killed)" + _stderr_hint(stderr),
                stderr=stderr,
                elapsed_ms=timeout * 1000.0,
            )
        if kind == "too_long":
            return Outcome(
                "lost",
                detail=f"the process printed over {MAX_MESSAGE_BYTES} "
                f"bytes, starting {_line_evidence(stdout)}",
                stderr=stderr,
                elapsed_ms=elapsed_ms,
            )
        return _per_case_outcome(code, stdout, stderr, seq, elapsed_ms)


def _per_case_outcome(
    code: int | None, stdout: bytes, stderr: str, seq: int, elapsed_ms: float
) -> Outcome:
    """Judge-ready outcome of one per-case process from its exit status and output.

    Exit 0 with an observation: returned. An ``error`` document (any exit status): raised,
    the implementation's own refusal. A non-zero exit without one: lost (errored, with
    the status and stderr): a command that could not start (a missing script, a syntax
    error, ``false``) exits non-zero too, and that is no refusal of the input. Killed by
    a signal: crashed. Exit 0 with anything else on stdout: lost.
    """
    text = stdout.decode("utf-8", "replace")
    if code is None or code < 0:
        return Outcome(
            "crashed",
            detail=f"the process {_describe_exit(code)}" + _stderr_hint(stderr),
            stdout=text,
            stderr=stderr,
            elapsed_ms=elapsed_ms,
            seen=code is not None,
        )
    outcome: Outcome | None = None
    problem = ""
    if stdout.strip():
        try:
            outcome = outcome_from_result(parse_message(stdout), seq, envelope_optional=True)
        except ProtocolError as exc:
            outcome, problem = None, str(exc)
    if outcome is not None and outcome.kind == "returned" and code != 0:
        return Outcome(
            "lost",
            detail=f"the process exited with status {code} after printing "
            "an observation" + _stderr_hint(stderr),
            stdout=text,
            stderr=stderr,
            elapsed_ms=elapsed_ms,
        )
    if outcome is not None:
        return replace(outcome, stderr=stderr, elapsed_ms=elapsed_ms)
    if code != 0:
        printed = f" after printing {_clip(repr(text))}" if problem else ""
        return Outcome(
            "lost",
            detail=f"the process exited with status {code} without an error document"
            f"{printed}" + _stderr_hint(stderr),
            stdout=text,
            stderr=stderr,
            elapsed_ms=elapsed_ms,
        )
    if problem:
        detail = (
            f"the process printed something that is not a result ({problem}): {_clip(repr(text))}"
        )
    else:
        detail = "the process exited with status 0 without printing a result"
    return Outcome(
        "lost",
        detail=detail + _stderr_hint(stderr),
        stdout=text,
        stderr=stderr,
        elapsed_ms=elapsed_ms,
    )
