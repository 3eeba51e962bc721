"""Strict comparison of an implementation's observation against a case's ``expect`` table.

A false pass is the worst bug a runner can have, so every rule here leans towards
reporting a mismatch: types must match exactly (``True`` is not ``1``, ``1`` is not
``1.0``), floats are never compared approximately, and a value of a type the runner does
not know is never equal to anything. Everything is a pure function over plain data; no
method of an unknown object is ever called, and :func:`compare` never raises.

``values_equal`` decides truth; the mismatch list only explains it. Where the two could
ever disagree, :func:`compare` reports a mismatch.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timezone
from operator import ge, le
from typing import Any

from cer.judge.equality import (
    CONTAINER_KINDS,
    datetime_problem,
    describe,
    equal,
    format_value,
    kind_of,
    known_tzinfo,
    scalar_equal,
    time_problem,
    type_name,
    values_equal,
)
from cer.model import MISSING, SELF_REPORTED, Mismatch

RUNNER_OBSERVED_KEYS: frozenset[str] = frozenset(
    {"rejects", "error", "error_type", "crashed", "hung", "elapsed_ms", "resident_memory_mb"}
)
"""Keys the runner fills into an observation when the implementation did not report them."""

MAX_MISMATCHES_PER_CONTAINER = 20
"""How many differences one list or table reports before summarising the rest."""

MAX_EXPLAINED_DEPTH = 100
"""Below this nesting depth differences are still detected, but not itemised."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# --------------------------------------------------------------------------- key helpers


def is_operator_key(key: str) -> bool:
    """Whether ``key`` of an expect table is an operator rather than a literal value:
    one of :data:`OPERATORS` (``BASE_max``, ``BASE_min``, ``BASE_contains``,
    ``BASE_any_of`` and ``BASE_unordered`` with a non-empty ``BASE``, exactly
    ``error_includes``, ``has_fields`` and the declaration ``self_reported``).
    """
    return type(key) is str and operator_of(key) is not None


def operator_of(key: str) -> tuple[Operator, str] | None:
    """The operator ``key`` names and the observation key it applies to (``BASE``;
    empty for an operator named whole), or None for a literal key. A whole name goes
    first, then the suffixes in the table's order."""
    whole = OPERATORS.get(key)
    if whole is not None and not whole.suffix:
        return whole, ""
    for operator in OPERATORS.values():
        name = operator.name
        if operator.suffix and key.endswith(name) and len(key) > len(name):
            return operator, key[: -len(name)]
    return None


def binding_key(expect: Mapping[str, Any]) -> str:
    """The observation key a non-mapping return value of an implementation is bound to.

    It is the only key of ``expect`` that is neither an operator nor runner-observed, when
    there is exactly one; otherwise ``"output"``.
    """
    candidates = [
        key
        for key in expect
        if type(key) is str and not is_operator_key(key) and key not in RUNNER_OBSERVED_KEYS
    ]
    return candidates[0] if len(candidates) == 1 else "output"


def key_path(parent: str, key: Any) -> str:
    """``parent.key``, or ``parent["odd key"]`` when the key is not an identifier."""
    if type(key) is str and _IDENTIFIER.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{_quote_key(key)}]"


def _quote_key(key: Any) -> str:
    if type(key) is not str:
        return format_value(key, 60)
    quoted = json.dumps(key, ensure_ascii=False)
    return quoted if quoted.isprintable() else json.dumps(key)


# ------------------------------------------------------------------------------- kinds


# ------------------------------------------------------------------------------ equality


# ---------------------------------------------------------------------------- formatting


# ----------------------------------------------------------------------- explaining diffs


class _Collector:
    """Gathers the differences of one container, bounded, with a summary of the rest."""

    def __init__(self, path: str, noun: str) -> None:
        self.path = path
        self.noun = noun
        self.items: list[Mismatch] = []
        self.hidden = 0

    @property
    def full(self) -> bool:
        return len(self.items) >= MAX_MISMATCHES_PER_CONTAINER

    def add(self, found: Sequence[Mismatch]) -> None:
        if not found:
            return
        room = MAX_MISMATCHES_PER_CONTAINER - len(self.items)
        if room <= 0 or len(found) > room:
            self.hidden += 1
        self.items.extend(found[: max(room, 0)])

    def count(self, differs: bool) -> None:
        """Past the bound, a difference is only counted."""
        if differs:
            self.hidden += 1

    def result(self) -> list[Mismatch]:
        if self.hidden:
            plural = "s" if self.hidden != 1 else ""
            where = self.path or "value"
            self.items.append(
                Mismatch(
                    self.path,
                    f"{where}: ... and {self.hidden} more differing {self.noun}{plural} "
                    f"not shown in full (the first {MAX_MISMATCHES_PER_CONTAINER} "
                    "differences are listed)",
                )
            )
        return self.items


def _diff(expected: Any, observed: Any, path: str, depth: int) -> list[Mismatch]:
    """Explain every difference between two values (bounded); empty when equal."""
    kind_e, kind_o = kind_of(expected), kind_of(observed)
    if kind_e is None:
        return [
            Mismatch(
                path,
                f"{path}: the expected value has unsupported type {type_name(expected)} "
                "and cannot be verified",
                expected,
                observed,
            )
        ]
    if observed is MISSING:
        return [
            Mismatch(
                path,
                f"{path}: implementation did not report a value (expected {describe(expected)})",
                expected,
                observed,
            )
        ]
    if kind_o != kind_e:
        return [
            Mismatch(
                path,
                f"{path}: expected {describe(expected)}, observed {describe(observed)}",
                expected,
                observed,
            )
        ]
    if depth >= MAX_EXPLAINED_DEPTH and kind_e in CONTAINER_KINDS:
        if equal(expected, observed):
            return []
        message = (
            f"{path}: values differ somewhere below nesting depth {MAX_EXPLAINED_DEPTH} "
            f"(expected {describe(expected)}, observed {describe(observed)})"
        )
        return [Mismatch(path, message, expected, observed)]
    if kind_e == "list":
        return _diff_list(expected, observed, path, depth)
    if kind_e == "dict":
        return _diff_table(expected, observed, path, depth)
    if kind_e == "str":
        return _diff_str(expected, observed, path)
    if scalar_equal(kind_e, expected, observed):
        return []
    detail = ""
    if kind_e == "datetime":
        detail = f"; {datetime_problem(expected, observed)}"
    elif kind_e == "time":
        detail = f"; {time_problem(expected, observed)}"
    message = f"{path}: expected {describe(expected)}, observed {describe(observed)}{detail}"
    return [Mismatch(path, message, expected, observed)]


def _diff_list(
    expected: Sequence[Any], observed: Sequence[Any], path: str, depth: int
) -> list[Mismatch]:
    out: list[Mismatch] = []
    n_e, n_o = len(expected), len(observed)
    if n_e != n_o:
        common = min(n_e, n_o)
        if n_o > n_e:
            detail = (
                f"{n_o - n_e} extra, the first being {path}[{common}] = "
                f"{format_value(observed[common], 80)}"
            )
        else:
            detail = (
                f"{n_e - n_o} missing, the first being {path}[{common}] = "
                f"{format_value(expected[common], 80)}"
            )
        out.append(
            Mismatch(
                path,
                f"{path}: expected a list of {n_e} element{'s' if n_e != 1 else ''}, "
                f"observed {n_o} ({detail})",
                expected,
                observed,
            )
        )
    collector = _Collector(path, "element")
    for index in range(min(n_e, n_o)):
        e, o = expected[index], observed[index]
        if collector.full:
            collector.count(not equal(e, o))
        else:
            collector.add(_diff(e, o, f"{path}[{index}]", depth + 1))
    return out + collector.result()


def _diff_table(
    expected: Mapping[Any, Any], observed: Mapping[Any, Any], path: str, depth: int
) -> list[Mismatch]:
    for side, table in (("expected", expected), ("observed", observed)):
        bad = [key for key in table if type(key) is not str]
        if bad:
            return [
                Mismatch(
                    path,
                    f"{path}: the {side} table has a key of type {type_name(bad[0])} "
                    f"({format_value(bad[0], 60)}); only string keys can be verified",
                    expected,
                    observed,
                )
            ]
    collector = _Collector(path, "key")
    for key, e in expected.items():
        child = key_path(path, key)
        if collector.full:
            collector.count(key not in observed or not equal(e, observed[key]))
        elif key not in observed:
            message = f"{child}: key missing from the observed table (expected {describe(e)})"
            collector.add([Mismatch(child, message, e, MISSING)])
        else:
            collector.add(_diff(e, observed[key], child, depth + 1))
    for key, o in observed.items():
        if key in expected:
            continue
        if collector.full:
            collector.count(True)
            continue
        child = key_path(path, key)
        message = f"{child}: unexpected key in the observed table (observed {describe(o)})"
        collector.add([Mismatch(child, message, MISSING, o)])
    return collector.result()


def _first_difference(a: str, b: str) -> int:
    """Index of the first differing character, or the shorter length for a prefix."""
    n = min(len(a), len(b))
    i, step = 0, 4096
    while i < n and a[i : i + step] == b[i : i + step]:
        i += step
    i = min(i, n)
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _line_at(text: str, start: int) -> str:
    """The line of ``text`` beginning at ``start``, including its newline if any."""
    end = text.find("\n", start)
    return text[start:] if end < 0 else text[start : end + 1]


def _excerpt(line: str, column: int, width: int = 100) -> str:
    """repr of ``line``, or of a window around 1-based ``column`` when the line is long."""
    if len(line) <= width:
        return repr(line)
    start = max(0, column - 1 - width // 3)
    end = start + width
    head = f"(from column {start + 1}) …" if start > 0 else ""
    tail = f"… ({len(line)} chars in the line)" if end < len(line) else ""
    return f"{head}{line[start:end]!r}{tail}"


def _diff_str(expected: str, observed: str, path: str) -> list[Mismatch]:
    if expected == observed:
        return []
    index = _first_difference(expected, observed)
    line = expected.count("\n", 0, index) + 1
    line_start = expected.rfind("\n", 0, index) + 1
    column = index - line_start + 1
    where = f"line {line}, column {column}"
    lengths = f"expected {len(expected)} chars, observed {len(observed)} chars"
    if index < len(expected) and index < len(observed):
        message = (
            f"{path}: strings differ at {where}: expected line {line} is "
            f"{_excerpt(_line_at(expected, line_start), column)}, observed line {line} is "
            f"{_excerpt(_line_at(observed, line_start), column)}"
        )
        if len(expected) != len(observed):
            message += f" ({lengths})"
    elif len(observed) < len(expected):
        rest = expected[index:]
        if rest == "\n":
            message = (
                f"{path}: observed is missing the trailing newline and is otherwise "
                f"identical ({lengths})"
            )
        else:
            message = (
                f"{path}: observed ends early at {where} and is otherwise identical "
                f"({lengths}); expected continues with {format_value(rest, 120)}"
            )
    else:
        rest = observed[index:]
        if rest == "\n":
            message = (
                f"{path}: observed has an extra trailing newline and is otherwise "
                f"identical ({lengths})"
            )
        else:
            message = (
                f"{path}: observed continues past the end of expected at {where} and is "
                f"otherwise identical ({lengths}); it continues with {format_value(rest, 120)}"
            )
    return [Mismatch(path, message, expected, observed)]


# ------------------------------------------------------------------------------- compare


def compare(expect: Mapping[str, Any], observation: Mapping[str, Any]) -> tuple[Mismatch, ...]:
    """Every way in which ``observation`` fails ``expect``; an empty tuple is a match.

    Each key of ``expect`` is checked in order: a declaration (``self_reported``) is
    skipped; a key present in the observation is compared strictly when
    :func:`literal_applies`; otherwise an operator key (one of :data:`OPERATORS`) is
    applied; otherwise the key was not reported. Keys of the observation that
    ``expect`` does not mention are ignored.
    Never raises.
    """
    try:
        return tuple(_compare(expect, observation))
    except Exception as exc:
        return (
            Mismatch(
                "",
                f"the comparison could not be completed ({type_name(exc)}); "
                "the case cannot be verified",
            ),
        )


def _get(observation: Mapping[str, Any], key: str) -> Any:
    """``observation[key]``, or MISSING when it is absent or holds MISSING."""
    if key not in observation:
        return MISSING
    return observation[key]


def _compare(expect: Mapping[str, Any], observation: Mapping[str, Any]) -> list[Mismatch]:
    if kind_of(expect) != "dict" and not isinstance(expect, Mapping):
        return [Mismatch("", "the expect value is not a table and cannot be verified", expect)]
    if kind_of(observation) != "dict" and not isinstance(observation, Mapping):
        return [
            Mismatch(
                "",
                f"the observation is not a table ({describe(observation)}); "
                "the case cannot be verified",
                MISSING,
                observation,
            )
        ]
    out: list[Mismatch] = []
    for key, expected in expect.items():
        if type(key) is not str:
            out.append(
                Mismatch(
                    key_path("", key),
                    f"expect has a key of type {type_name(key)}; it cannot be verified",
                    expected,
                )
            )
            continue
        path = key_path("", key)
        found_operator = operator_of(key)
        if found_operator is not None and found_operator[0].declaration:
            continue  # says something about the other keys; compares nothing itself
        observed = _get(observation, key)
        if observed is not MISSING and literal_applies(key, observation):
            found = _diff(expected, observed, path, 0)
            if not found and not values_equal(expected, observed):
                found = [
                    Mismatch(
                        path,
                        f"{path}: expected {describe(expected)}, observed {describe(observed)}",
                        expected,
                        observed,
                    )
                ]
            out.extend(found)
        elif found_operator is not None:
            operator, base = found_operator
            out.extend(operator.apply(path, base, expected, observation))
        else:
            out.append(
                Mismatch(
                    path,
                    f"{path}: implementation did not report {key} (expected {describe(expected)})",
                    expected,
                    MISSING,
                )
            )
    return out


def literal_applies(key: str, observation: Mapping[str, Any]) -> bool:
    """Whether ``key`` of an expect table, which the observation also holds, is compared
    for equality with that observed value rather than applied as its operator.

    A plain key always is. An operator named whole (``error_includes``, ``has_fields``)
    never is: it looks at the observation's ``error`` or fields, which a key of its own
    name cannot stand for. A suffix operator (``K_any_of``) is only when the observation
    lacks ``K``: an implementation that reports ``K`` is held to the operator on it, so
    that ``{"k": 5, "k_any_of": [1]}`` does not meet ``k_any_of = [1]``.
    """
    found = operator_of(key)
    if found is None:
        return True
    operator, base = found
    return operator.suffix and _get(observation, base) is MISSING


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


_UNITS: tuple[tuple[str, str], ...] = (
    ("_ms", "ms"),
    ("_us", "µs"),
    ("_ns", "ns"),
    ("_seconds", "s"),
    ("_s", "s"),
    ("_mb", "MB"),
    ("_kb", "kB"),
    ("_gb", "GB"),
    ("_mib", "MiB"),
    ("_kib", "KiB"),
    ("_gib", "GiB"),
)
"""Name endings of a measurement and the unit it is shown in."""


def unit_of(base: str) -> str | None:
    """The unit a key's name ends in (``elapsed_ms``: ``ms``), or None."""
    return next((unit for ending, unit in _UNITS if base.endswith(ending)), None)


def for_people(base: str, value: Any, *others: Any) -> str:
    """A measurement as people read it (``1129 ms``, not ``1129.4466920007835``), with
    as many decimals as it takes to tell it from each of ``others`` (the bounds it is
    held to); a value that is no measurement of a known unit is written as it is."""
    unit = unit_of(base)
    if unit is None or not _is_number(value):
        return format_value(value)
    if type(value) is int:  # of any size: shown bounded, never converted to a float
        return f"{format_value(value)} {unit}"
    if not math.isfinite(value):
        return format_value(value)
    digits = 0 if abs(value) >= 10 else 1
    for other in others:
        if not _is_number(other) or not _float_sized(other) or not math.isfinite(other):
            continue
        while digits < 6 and value != other and f"{value:.{digits}f}" == f"{other:.{digits}f}":
            digits += 1
        if value != other and f"{value:.{digits}f}" == f"{other:.{digits}f}":
            return f"{format_value(value)} {unit}"  # only every digit tells them apart
    return f"{value:.{digits}f} {unit}"


def shown_measurement(key: str, value: Any, expect: Mapping[str, Any]) -> str | None:
    """How a report shows an observed ``key`` (``elapsed_ms = 1129 ms``) when it is a
    measurement with a unit, held only to bounds, a float: told apart from each bound.
    None when it must be shown exactly (a value ``expect`` compares it to for equality,
    no unit, not a float): what is compared for equality stays exact."""
    if type(value) is not float or key in expect or unit_of(key) is None:
        return None
    names = (
        f"{key}{operator.name}" for operator in OPERATORS.values() if operator.bound is not None
    )
    bounds = [expect[name] for name in names if name in expect]
    return for_people(key, value, *bounds)


def shown_mismatch_observed(mismatch: Mismatch) -> str | None:
    """A bound's observed value as people read it (:func:`for_people`, told apart from
    the bound), or None when the mismatch is not a missed bound on a measurement."""
    for operator in OPERATORS.values():
        if operator.bound is None:
            continue
        suffix = operator.name
        base = mismatch.path[: -len(suffix)]
        if mismatch.path.endswith(suffix) and base and type(mismatch.observed) is float:
            if unit_of(base) is None:
                return None
            return for_people(base, mismatch.observed, mismatch.expected)
    return None


def _float_sized(value: float) -> bool:
    """Whether a number can be written as a float (an int of any size cannot)."""
    return not isinstance(value, int) or value.bit_length() <= 1000


def _bound(path: str, base: str, held: Bound, bound: Any, observed: Any) -> list[Mismatch]:
    if not _is_number(bound) or (type(bound) is float and math.isnan(bound)):
        return [
            Mismatch(
                path,
                f"{path}: the bound must be a number, but expect gives {describe(bound)}; "
                "it cannot be verified",
                bound,
                observed,
            )
        ]
    symbol = held.symbol
    vacuous = vacuous_bound(base, held, bound)
    if vacuous:
        return [Mismatch(path, f"{path}: {vacuous}; it verifies nothing", bound, observed)]
    if observed is MISSING:
        return [
            Mismatch(
                path,
                f"{path}: implementation did not report {base} "
                f"(expected {base} {symbol} {format_value(bound)})",
                bound,
                MISSING,
            )
        ]
    if not _is_number(observed):
        return [
            Mismatch(
                path,
                f"{path}: expected {base} to be a number {symbol} {format_value(bound)}, "
                f"observed {describe(observed)}",
                bound,
                observed,
            )
        ]
    if type(observed) is float and math.isnan(observed):
        return [
            Mismatch(
                path,
                f"{path}: observed {base} is nan, which satisfies no bound "
                f"(expected {symbol} {format_value(bound)})",
                bound,
                observed,
            )
        ]
    if held.holds(observed, bound):
        return []
    return [
        Mismatch(
            path,
            f"{path}: expected {base} {symbol} {format_value(bound)}, "
            f"observed {for_people(base, observed, bound)}",
            bound,
            observed,
        )
    ]


NEVER_NEGATIVE = frozenset({"elapsed_ms", "resident_memory_mb"})
"""Measurements the runner makes, which are never below zero."""


def vacuous_bound(base: str, held: Bound, bound: float) -> str:
    """Why a bound holds for every value it could be checked against, or ``""``: the
    number farthest from meeting it meets it (``K_max = inf``), or, for a measurement
    that is never negative, the farthest measurement does (``elapsed_ms_min = 0``)."""
    if held.holds(held.farthest, bound):
        return f"{base} {held.symbol} {format_value(bound)} holds for every number"
    if base in NEVER_NEGATIVE and held.holds(max(held.farthest, 0), bound):
        return f"{base} {held.symbol} {format_value(bound)} holds for every measurement"
    return ""


def _contains(path: str, base: str, needle: Any, observed: Any) -> list[Mismatch]:
    if observed is MISSING:
        return [
            Mismatch(
                path,
                f"{path}: implementation did not report {base} "
                f"(expected it to contain {describe(needle)})",
                needle,
                MISSING,
            )
        ]
    kind = kind_of(observed)
    if kind == "str":
        if type(needle) is not str:
            return [
                Mismatch(
                    path,
                    f"{path}: {base} is a string, which can only contain a string, but expect "
                    f"looks for {describe(needle)}",
                    needle,
                    observed,
                )
            ]
        if not needle:
            return [
                Mismatch(
                    path,
                    f"{path}: every string contains the empty string; it verifies nothing",
                    needle,
                    observed,
                )
            ]
        if needle in observed:
            return []
        return [
            Mismatch(
                path,
                f"{path}: {base} does not contain {format_value(needle)}; observed "
                f"{format_value(observed)}",
                needle,
                observed,
            )
        ]
    if kind == "list":
        if any(equal(needle, item) for item in observed):
            return []
        return [
            Mismatch(
                path,
                f"{path}: no element of {base} equals {describe(needle)}; observed "
                f"{format_value(observed)}",
                needle,
                observed,
            )
        ]
    return [
        Mismatch(
            path,
            f"{path}: {base} must be a string or a list to look for {describe(needle)} in "
            f"it, observed {describe(observed)}",
            needle,
            observed,
        )
    ]


def _error_includes(path: str, needle: Any, observation: Mapping[str, Any]) -> list[Mismatch]:
    if type(needle) is not str:
        return [
            Mismatch(
                path,
                f"{path}: error_includes must be a string, but expect gives "
                f"{describe(needle)}; it cannot be verified",
                needle,
            )
        ]
    if not needle:
        return [
            Mismatch(
                path,
                f"{path}: every error includes the empty string; it verifies nothing "
                "(rejects = true asks for any rejection)",
                needle,
            )
        ]
    error = _get(observation, "error")
    if error is MISSING or error is None:
        return [
            Mismatch(
                path,
                f"{path}: implementation did not raise (expected an error including "
                f"{format_value(needle)})",
                needle,
                error,
            )
        ]
    if type(error) is not str:
        return [
            Mismatch(
                path,
                f"{path}: the error must be a string including {format_value(needle)}, "
                f"observed {describe(error)}",
                needle,
                error,
            )
        ]
    if needle in error:
        return []
    return [
        Mismatch(
            path,
            f"{path}: the error does not include {format_value(needle)}; observed error "
            f"{format_value(error)}",
            needle,
            error,
        )
    ]


def _has_fields(path: str, fields: Any, observation: Mapping[str, Any]) -> list[Mismatch]:
    if kind_of(fields) != "list" or not all(type(field) is str for field in fields):
        return [
            Mismatch(
                path,
                f"{path}: has_fields must be a list of strings, but expect gives "
                f"{describe(fields)}; it cannot be verified",
                fields,
            )
        ]
    wanted = list(dict.fromkeys(fields))
    if not wanted:
        return [Mismatch(path, f"{path}: it lists no field; it verifies nothing", fields)]
    output = _get(observation, "output")
    kind = kind_of(output)
    if kind == "dict":
        return _missing_fields(path, wanted, output, "output", "output")
    if kind == "list":
        if not output:
            return [
                Mismatch(
                    "output",
                    f"output: {path} requires each element of output to have fields "
                    f"{format_value(wanted)}, but output is an empty array, which shows none",
                    wanted,
                    output,
                )
            ]
        collector = _Collector("output", "element")
        for index, element in enumerate(output):
            if collector.full:
                collector.count(_lacks_fields(wanted, element))
            else:
                collector.add(_element_fields(path, wanted, element, f"output[{index}]"))
        return collector.result()
    # Keys the runner fills in on its own cannot stand for fields the implementation
    # reported.
    own = {k: v for k, v in observation.items() if k not in RUNNER_OBSERVED_KEYS}
    return _missing_fields(path, wanted, own, "", "the observation")


def _lacks_fields(wanted: list[str], element: Any) -> bool:
    return kind_of(element) != "dict" or any(field not in element for field in wanted)


def _element_fields(path: str, wanted: list[str], element: Any, where: str) -> list[Mismatch]:
    if kind_of(element) != "dict":
        return [
            Mismatch(
                where,
                f"{where}: {path} requires each element of output to be a table with fields "
                f"{format_value(wanted)}, observed {describe(element)}",
                wanted,
                element,
            )
        ]
    return _missing_fields(path, wanted, element, where, where)


def _missing_fields(
    path: str, wanted: list[str], target: Mapping[str, Any], where: str, name: str
) -> list[Mismatch]:
    collector = _Collector(where, "field")
    for field in wanted:
        if _get(target, field) is not MISSING:
            continue
        child = key_path(where, field)
        collector.add(
            [
                Mismatch(
                    child,
                    f"{child}: {path} requires field {field!r}, which {name} lacks",
                    field,
                    MISSING,
                )
            ]
        )
    return collector.result()


def _any_of(path: str, base: str, choices: Any, observed: Any) -> list[Mismatch]:
    if kind_of(choices) != "list":
        return [
            Mismatch(
                path,
                f"{path}: {path} must be an array of the values {base} may equal, but "
                f"expect gives {describe(choices)}; it cannot be verified",
                choices,
                observed,
            )
        ]
    if not choices:
        return [Mismatch(path, f"{path}: it lists no value; it verifies nothing", choices)]
    plural = "s" if len(choices) != 1 else ""
    wanted = f"one of {len(choices)} value{plural} {format_value(choices)}"
    if observed is MISSING:
        return [
            Mismatch(
                path,
                f"{path}: implementation did not report {base} (expected {wanted})",
                choices,
                MISSING,
            )
        ]
    if any(equal(choice, observed) for choice in choices):
        return []
    return [
        Mismatch(
            path,
            f"{path}: expected {base} to equal {wanted}, observed {describe(observed)}",
            choices,
            observed,
        )
    ]


MAX_UNORDERED_SHOWN = 5
"""How many unmatched elements of each side a ``K_unordered`` mismatch names."""


def _unordered(path: str, base: str, expected: Any, observed: Any) -> list[Mismatch]:
    if kind_of(expected) != "list":
        return [
            Mismatch(
                path,
                f"{path}: {path} must be an array, but expect gives {describe(expected)}; "
                "it cannot be verified",
                expected,
                observed,
            )
        ]
    n_e = len(expected)
    what = f"an array of {n_e} element{'s' if n_e != 1 else ''} in any order"
    if observed is MISSING:
        return [
            Mismatch(
                path,
                f"{path}: implementation did not report {base} (expected {what})",
                expected,
                MISSING,
            )
        ]
    if kind_of(observed) != "list":
        return [
            Mismatch(
                path,
                f"{path}: expected {base} to be {what}, observed {describe(observed)}",
                expected,
                observed,
            )
        ]
    missing, extra = unmatched(expected, observed)
    if not missing and not extra:
        return []
    parts = []
    if missing:
        parts.append(f"{_elements(missing)} expected but not observed")
    if extra:
        parts.append(f"{_elements(extra)} observed but not expected")
    n_o = len(observed)
    sizes = f"; observed {n_o} element{'s' if n_o != 1 else ''}" if n_o != n_e else ""
    return [
        Mismatch(
            path,
            f"{path}: expected {base} to be {what}{sizes}: {'; '.join(parts)}",
            expected,
            observed,
        )
    ]


def _elements(items: list[Any]) -> str:
    """Unmatched elements, as a message names them: the first few, and how many."""
    shown = ", ".join(format_value(item, 80) for item in items[:MAX_UNORDERED_SHOWN])
    more = len(items) - MAX_UNORDERED_SHOWN
    tail = f" and {more} more" if more > 0 else ""
    return f"{len(items)} element{'s' if len(items) != 1 else ''} ({shown}{tail})"


def unmatched(expected: Sequence[Any], observed: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """The elements of ``expected`` no element of ``observed`` is paired with, and the
    observed ones left over: both empty when the two arrays are equal up to order, as
    multisets under strict equality (``[1, 1, 2]`` is not ``[1, 2, 2]``).

    Strict equality is an equivalence, so pairing each expected element with the first
    free observed one equal to it finds a full pairing when one exists. Elements are
    first sorted into buckets by :func:`_bucket`, which equal values always share, so
    that only elements of one bucket are ever compared with each other, and not even
    those when the bucket says all of a value (no date-time in it, not too deep).
    """
    # Each bucket's free observed indices, the first last: taking one from the end
    # costs nothing, however many equal elements share the bucket.
    free: dict[Any, list[int]] = {}
    for index in range(len(observed) - 1, -1, -1):
        free.setdefault(_bucket(observed[index], 0)[0], []).append(index)
    taken = [False] * len(observed)
    missing: list[Any] = []
    for item in expected:
        key, exact = _bucket(item, 0)
        slots = free.get(key)
        found = None
        if slots:
            last = len(slots) - 1
            found = (
                last
                if exact
                else next(
                    (at for at in range(last, -1, -1) if equal(item, observed[slots[at]])), None
                )
            )
        if slots is None or found is None:
            missing.append(item)
        else:
            taken[slots.pop(found)] = True
    extra = [item for item, paired in zip(observed, taken, strict=True) if not paired]
    return missing, extra


def _bucket(value: Any, depth: int) -> tuple[Any, bool]:
    """A hashable summary of ``value`` that two strictly equal values always share
    (types included: ``1``, ``1.0`` and ``True`` differ), and whether it says all of
    the value, so that sharing it is being equal. Values it cannot summarise exactly
    (date-times, whose equality involves their offsets: by their reading and offset,
    see :func:`_moment_bucket`; anything deeper than the explained depth: by kind
    alone) share a bucket that does not say all, and the pairing compares them."""
    cls = type(value)
    if cls is str:  # the usual elements first, without looking up their kind
        return ("str", value), True
    if cls is int:
        return ("int", value), True
    kind = kind_of(value)
    if kind in ("str", "int", "bool", "bytes", "None", "date"):
        return (kind, value), True
    if kind == "float":
        return ((kind, "nan") if math.isnan(value) else (kind, value)), True
    if kind in ("datetime", "time"):
        return _moment_bucket(kind, value)
    if depth >= MAX_EXPLAINED_DEPTH:
        return (kind,), False
    if kind == "list":
        parts = [_bucket(item, depth + 1) for item in value]
        return (kind, tuple(part for part, _ in parts)), all(exact for _, exact in parts)
    if kind == "dict" and all(type(key) is str for key in value):
        pairs = sorted((key, _bucket(item, depth + 1)) for key, item in value.items())
        summary = tuple((key, part) for key, (part, _) in pairs)
        return (kind, summary), all(exact for _, (_, exact) in pairs)
    return (kind,), False


def _moment_bucket(kind: str, value: Any) -> tuple[Any, bool]:
    """The bucket of a date-time or a time of day: its wall-clock reading and its UTC
    offset, which two equal ones share (equality asks for the same instant and the same
    offset, or both naive), so that many date-times are paired without comparing each
    with each. It is never exact: the few sharing one are compared (a zone's comparisons
    can depend on ``fold``); a value of a zone the runner does not know equals nothing,
    and shares a coarse bucket."""
    tz = value.tzinfo
    if tz is not None and type(tz) is not timezone and not known_tzinfo(tz):
        return (kind,), False
    if kind == "datetime":
        wall: Any = value.replace(tzinfo=None, fold=0)
        offset = value.utcoffset()
    else:
        wall = (value.hour, value.minute, value.second, value.microsecond)
        offset = value.utcoffset()
    return (kind, wall, offset), False


# ----------------------------------------------------------------------------- operators


@dataclass(frozen=True)
class Bound:
    """Which way a bound operator holds the key it applies to: ``_max`` to at most the
    bound, ``_min`` to at least."""

    symbol: str
    """How a reason writes the comparison (``<=``)."""
    holds: Callable[[Any, Any], bool]
    """``(observed, bound)`` → whether an observed number meets the bound."""
    farthest: float
    """The number farthest from meeting any bound (``inf`` for a maximum): a bound this
    meets, every number meets (:func:`vacuous_bound`)."""


AT_MOST = Bound("<=", le, math.inf)
"""The bound of ``K_max``: ``K <= N``."""

AT_LEAST = Bound(">=", ge, -math.inf)
"""The bound of ``K_min``: ``K >= N``."""


@dataclass(frozen=True)
class Operator:
    """A key of an expect table that is not compared with an observed value of its own
    name but applied to the observation: ``BASE_max`` holds ``BASE`` to a bound,
    ``error_includes`` looks into the error. What the judge does differently for one
    operator is said here, as data of its entry, and read wherever it matters."""

    name: str
    """The whole key (``error_includes``) or, for a suffix operator, the suffix after
    the key it applies to (``_max``)."""
    suffix: bool
    apply: Callable[[str, str, Any, Mapping[str, Any]], list[Mismatch]]
    """``(path, base, value, observation)`` → every way the observation fails the
    operator's ``value`` (``base``: the key a suffix operator applies to, else empty);
    no mismatch is a match, so an operator that cannot tell must say so in one."""
    bound: Bound | None = None
    """It holds the key it applies to to a bound (``_max``, ``_min``), and which way:
    that key is compared as a measurement, which the verdict checks the runner makes,
    or the case declares the implementation's own
    (:func:`cer.judge.verdict.unmeasured_keys`)."""
    declaration: bool = False
    """It compares nothing: it says something about the case's other keys
    (``self_reported``). :func:`compare` skips it, whatever the observation holds, and
    it never counts as an expectation that could fail."""
    operand: Callable[[Any], str] | None = None
    """Why a value cannot be this operator's operand (``""`` when it can), for
    ``cer check`` to say before a run what the comparison would then report as a
    mismatch whatever the implementation does; None: any value can."""
    vacuous: Callable[[str, str, Any], str] | None = None
    """``(key, base, value)`` → why that operand holds whatever is observed
    (``has_fields lists no field``), or ``""``: the verdict errors such a case before
    comparing (:func:`cer.judge.verdict.vacuous_expectations`); None: every operand
    can fail."""
    asks_error: Callable[[Any], str] | None = None
    """It asks something of the error the implementation raised (``error_includes``),
    which makes it a rejection key (:data:`REJECTION_KEYS`): ``value`` → how the one
    line of a rejection that did not happen as asked names what it asks of the error
    (``including 'bad'``). None: it asks nothing of an error."""
    choices: bool = False
    """Its operand lists values the key it applies to may equal (``_any_of``): each is
    a value the key is meant to hold, as a literal key's value is."""


def _bounded(name: str, held: Bound) -> Operator:
    """The suffix operator ``name`` holding the key it applies to ``held``."""

    def apply(path: str, base: str, value: Any, observation: Mapping[str, Any]) -> list[Mismatch]:
        return _bound(path, base, held, value, _get(observation, base))

    def vacuous(key: str, base: str, value: Any) -> str:
        if not _is_number(value) or value != value:
            return ""
        why = vacuous_bound(base, held, value)
        return f"{key}: {why}" if why else ""

    return Operator(name, True, apply, bound=held, operand=_number_operand, vacuous=vacuous)


def _contains_in(
    path: str, base: str, value: Any, observation: Mapping[str, Any]
) -> list[Mismatch]:
    return _contains(path, base, value, _get(observation, base))


def _error_including(
    path: str, base: str, value: Any, observation: Mapping[str, Any]
) -> list[Mismatch]:
    return _error_includes(path, value, observation)


def _having_fields(
    path: str, base: str, value: Any, observation: Mapping[str, Any]
) -> list[Mismatch]:
    return _has_fields(path, value, observation)


def _any_of_in(path: str, base: str, value: Any, observation: Mapping[str, Any]) -> list[Mismatch]:
    return _any_of(path, base, value, _get(observation, base))


def _unordered_in(
    path: str, base: str, value: Any, observation: Mapping[str, Any]
) -> list[Mismatch]:
    return _unordered(path, base, value, _get(observation, base))


def _declared(path: str, base: str, value: Any, observation: Mapping[str, Any]) -> list[Mismatch]:
    return []


def _number_operand(value: Any) -> str:
    if _is_number(value) and value == value:
        return ""
    return f"the bound must be a number, but expect gives {describe(value)}"


def _array_operand(value: Any) -> str:
    return "" if kind_of(value) == "list" else f"it must be an array, not {describe(value)}"


def _string_operand(value: Any) -> str:
    return "" if type(value) is str else f"it must be a string, not {describe(value)}"


def _fields_operand(value: Any) -> str:
    if kind_of(value) == "list" and all(type(field) is str for field in value):
        return ""
    return f"it must be a list of strings, not {describe(value)}"


def _no_field(key: str, base: str, value: Any) -> str:
    return f"{key} lists no field" if type(value) is list and not value else ""


def _in_every_error(key: str, base: str, value: Any) -> str:
    return f'{key} = "" is included in every error' if type(value) is str and not value else ""


_RUNNER_BOOLEANS = ("rejects", "crashed", "hung")
"""The runner-observed keys every outcome gives ``true`` or ``false``."""


def _no_value(key: str, base: str, value: Any) -> str:
    if type(value) is not list:
        return ""
    if not value:
        return f"{key} lists no value"
    both = any(v is True for v in value) and any(v is False for v in value)
    if base in _RUNNER_BOOLEANS and both:  # every outcome is one or the other
        return f"{key} lists both true and false, every value {base} can have"
    return ""


def _including(value: Any) -> str:
    return f"including {format_value(value)}"


BOUND_MAX = _bounded("_max", AT_MOST)
BOUND_MIN = _bounded("_min", AT_LEAST)
ERROR_INCLUDES = Operator(
    "error_includes",
    False,
    _error_including,
    operand=_string_operand,
    vacuous=_in_every_error,
    asks_error=_including,
)
"""The operators other modules name, as they write one into a suite (``cer derive``
proposes ``elapsed_ms_max`` and ``error_includes``): by their entry, never by a
spelling of their own."""

OPERATORS: dict[str, Operator] = {
    operator.name: operator
    for operator in (
        BOUND_MAX,
        BOUND_MIN,
        Operator("_contains", True, _contains_in),
        Operator(
            "_any_of", True, _any_of_in, operand=_array_operand, vacuous=_no_value, choices=True
        ),
        Operator("_unordered", True, _unordered_in, operand=_array_operand),
        ERROR_INCLUDES,
        Operator("has_fields", False, _having_fields, operand=_fields_operand, vacuous=_no_field),
        Operator(SELF_REPORTED, False, _declared, declaration=True),
    )
}
"""Every operator of an expect table, by name: what :func:`is_operator_key` knows and
:func:`compare` applies (docs/architecture.md, "Where a new X goes": "A comparison
operator"). docs/execution-model.md lists the same operators in its table."""

REJECTION_KEYS: frozenset[str] = frozenset(
    {
        "rejects",
        "error_type",
        *(name for name, operator in OPERATORS.items() if operator.asks_error is not None),
    }
)
"""An expect table holding any of these asks whether the implementation rejected the
input: ``rejects``, ``error_type``, and each operator that asks something of the error."""


def operand_problems(expect: Mapping[str, Any]) -> list[str]:
    """Each operator key of ``expect`` whose value cannot be its operand, as
    ``key: why``: the comparison would report it as a mismatch whatever is observed
    (unless the observation holds a key of that literal name)."""
    found: list[str] = []
    for key, value in expect.items():
        operator = operator_of(key) if type(key) is str else None
        if operator is not None and operator[0].operand is not None:
            why = operator[0].operand(value)
            if why:
                found.append(f"{key}: {why}")
    return found
