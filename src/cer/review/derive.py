"""Derive: propose draft cases for a module's constraints, each labelled by enforceability.

A module's ``commonsformat.md`` declares constraints in prose; a suite's cases name the
ones they check. :func:`derive` reads both and proposes a *draft* for every constraint no
case verifies (and, with ``every=True``, more for those that have some). A draft carries
the input shape learned from the suite's existing cases and the strongest expectation
the constraint's own words allow: an example written in it ("`10 - 4 - 3` is `3`"), a
rejection ("is malformed", "raises ValueError mentioning "x""), a time bound ("under two
seconds"). Each draft, and each constraint, gets an enforceability label:

``mechanical``
    input and expectation are complete: the runner can hold an implementation to it;
``needs-input``
    the rule is checkable but a person must supply an example (an input, an expected
    value, or both);
``not-mechanical``
    no runner can hold an implementation to it as written ("is readable").

Nothing here writes files or runs anything: the same inputs give the same drafts. Drafts
live in ``evals.drafts.toml`` (see :mod:`cer.review.drafts`) and only count once a person
approves them (see :mod:`cer.review.approve`).
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cer.constraints import Coverage, CoverageFigures
from cer.judge.compare import (
    BOUND_MAX,
    ERROR_INCLUDES,
    REJECTION_KEYS,
    RUNNER_OBSERVED_KEYS,
    is_operator_key,
    operator_of,
)
from cer.model import CASE_CLASS_TO_ARRAY, Case, Suite

__all__ = [
    "ENFORCEABILITY",
    "Assessment",
    "Derivation",
    "Draft",
    "Enforceability",
    "SuiteShape",
    "assess",
    "coverage_figures",
    "derive",
    "learn_shape",
]

Enforceability = Literal["mechanical", "needs-input", "not-mechanical"]
ENFORCEABILITY: tuple[Enforceability, ...] = ("mechanical", "needs-input", "not-mechanical")

DraftKind = Literal["example", "rejection", "bound", "open"]

# Words that make a rule a matter of taste: no runner can decide them as written.
_SUBJECTIVE = re.compile(
    r"\b(readable|polite|friendly|intuitive|elegant|idiomatic|helpful|pleasant|"
    r"understandable|maintainable|beautiful|nice|clean|clear|sensible|reasonable|"
    r"appropriate|graceful|well[- ]documented|well[- ]structured|easy to)\b",
    re.IGNORECASE,
)
# "`A` is `B`", "`A` gives `B`", "`A` evaluates to `B`", "`A` → `B`".
_EXAMPLE = re.compile(
    r"`(?P<input>[^`]+)`\s*(?:\)\s*)?(?:is|gives|returns|equals|evaluates to|yields|→|->|=>)"
    r"\s+`(?P<value>[^`]+)`"
)
_ITEMS = r"(?P<items>`[^`]+`(?:\s*(?:,|\band\b|\bor\b)\s*`[^`]+`)*)"
# The ways people write that inputs are refused, grown from the sentences kept in
# tests/data/derive_sentences.toml. The inputs first: "`.5`, `5.` and `1.2.3` are
# malformed", "`1.2.3-beta` must be rejected", "`x` raises ValueError", "`` fails with".
_BAD_EXAMPLES = re.compile(
    _ITEMS + r"\s+(?:(?:is|are)\s+(?:also\s+)?|(?:must|should|shall|will)\s+(?:be\s+)?)?"
    r"(?P<word>malformed|rejected|refused|invalid|an error|errors?|raises?|throws?|"
    r"fails?(?:\s+with)?|not accepted)\b"
)
# The rejection first, the inputs after it: "rejects `1..2`", "must reject `a` and `b`",
# "raises `RangeError` for `1.2.3-beta`", "is an error for ``", "fails with X on `-`".
_REJECTS_INPUTS = re.compile(
    r"\b(?P<word>must reject|must refuse|rejects?|refuses?|"
    r"(?:raises?|throws?|fails? with|is an error|errors?)"
    r"(?:\s+(?:an?\s+)?`?[A-Z][A-Za-z0-9]*(?:Error|Exception)`?)?"
    r"(?:\s+(?:mentioning|including|saying)\s+(?:\"[^\"]*\"|“[^”]*”))?"
    r"\s+(?:for|on|when given|given|with input|with))\s+"
    + _ITEMS
    + r"|\b(?P<word2>must reject|must refuse|rejects?|refuses?)\s+(?:input(?:s)?\s+)?"
    + _ITEMS.replace("items", "items2")
)
# "returns `false` for `1.2`", "gives `3` for `1 + 2`".
_EXAMPLE_FOR = re.compile(
    r"\b(?:returns?|gives?|yields?|is|evaluates to)\s+`(?P<value>[^`]+)`\s+"
    r"(?:for|on|given|when given)\s+`(?P<input>[^`]+)`"
)
_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)")
_REJECTION = re.compile(
    r"\b(malformed|must reject|rejects?|rejected|raises?|refused|refuses|"
    r"is an error|fails? with|invalid)\b",
    re.IGNORECASE,
)
_ERROR_TYPE = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception))\b")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")
_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twenty": 20,
    "thirty": 30,
    "fifty": 50,
    "hundred": 100,
    "a hundred": 100,
}
_BOUND = re.compile(
    r"\b(?:well\s+)?(?:under|within|at most|no more than|less than|below|in less than)\s+"
    r"(?:a\s+|an\s+)?(?P<number>\d[\d,]*(?:\.\d+)?|"
    + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
    + r")?\s*(?P<unit>ms|milliseconds?|seconds?|s|minutes?)\b",
    re.IGNORECASE,
)
_UNIT_MS = {"ms": 1, "millisecond": 1, "second": 1000, "s": 1000, "minute": 60_000}


@dataclass(frozen=True)
class Draft:
    """A proposed case: not part of the suite until a person approves it.

    ``input`` or ``expect`` is None when the constraint's text does not supply it; a
    person writes it (or, for ``expect``, takes ``observed``) before approving.
    """

    name: str
    constraint: str
    array: str
    category: str
    enforceability: Enforceability
    why: str
    description: str
    input: Mapping[str, Any] | None
    expect: Mapping[str, Any] | None
    severity: str | None = None
    observed: Mapping[str, Any] | None = None
    """The expectation an implementation's observed behaviour proposes, never checked."""
    observed_from: str | None = None
    """The implementation id whose behaviour ``observed`` records."""
    observed_note: str | None = None
    """Why there is no ``observed`` after a run (a crash, a value TOML cannot hold)."""

    @property
    def is_complete(self) -> bool:
        """Whether it has an input and a non-empty expectation, as a case needs."""
        return self.input is not None and bool(self.expect)

    @property
    def standing(self) -> Enforceability:
        """Its label as it stands now: a ``needs-input`` draft that has got an input and
        an expectation (a person wrote them, or an implementation's observation waits to
        be accepted with ``--use-observed``) needs no input any more: ``mechanical``."""
        if (
            self.enforceability == "needs-input"
            and self.input is not None
            and (bool(self.expect) or self.observed is not None)
        ):
            return "mechanical"
        return self.enforceability


@dataclass(frozen=True)
class Assessment:
    """How far one constraint can be held mechanically, and why not when it cannot."""

    constraint: str
    text: str
    label: Enforceability
    covered: bool
    why: str


@dataclass(frozen=True)
class Derivation:
    """The result of :func:`derive`: one assessment per constraint and the drafts."""

    assessments: tuple[Assessment, ...]
    drafts: tuple[Draft, ...]

    @property
    def total(self) -> int:
        return len(self.assessments)

    @property
    def enforceable(self) -> int:
        return sum(1 for a in self.assessments if a.label == "mechanical")

    @property
    def needs_repair(self) -> tuple[Assessment, ...]:
        return tuple(a for a in self.assessments if a.label != "mechanical")

    def headline(self) -> str:
        """``K of N constraints mechanically enforceable``, the honest summary."""
        return f"{self.enforceable} of {self.total} constraints mechanically enforceable"


@dataclass(frozen=True)
class SuiteShape:
    """What the suite's existing cases teach about writing a new one."""

    input_key: str | None
    """The single string input most cases take (``expr``), or None when fewer than
    half the cases take one string input."""
    value_key: str
    """The expect key a returned value is compared under (``value``, ``output``)."""
    placement: Mapping[str, tuple[str, str, str | None]] = field(default_factory=dict)
    """Per kind of draft: (array, category, severity) most cases of that kind use."""

    def place(self, kind: str) -> tuple[str, str, str | None]:
        return (
            self.placement.get(kind)
            or self.placement.get("example")
            or (
                "cases",
                "functional",
                None,
            )
        )


def _kind_of(case: Case) -> str:
    if case.expect.keys() & REJECTION_KEYS and case.expect.get("rejects") is not False:
        return "rejection"
    bounds = (operator_of(key) for key in case.expect)
    if any(found is not None and found[0].bound is not None for found in bounds):
        return "bound"
    return "example"


def _most_common(items: Sequence[Any]) -> Any:
    """The most frequent item; the earliest seen wins a tie (deterministic)."""
    counts = Counter(items)
    best = max(counts.values())
    return next(item for item in items if counts[item] == best)


def learn_shape(suite: Suite) -> SuiteShape:
    """The input key, value key and placements the suite's cases use most."""
    singles = [
        next(iter(case.input))
        for case in suite.cases
        if len(case.input) == 1 and isinstance(next(iter(case.input.values())), str)
    ]
    input_key = _most_common(singles) if singles else None
    if input_key is not None and singles.count(input_key) * 2 <= len(suite.cases):
        input_key = None  # most cases take something else: no single input to fill
    plain = [
        key
        for case in suite.cases
        if _kind_of(case) == "example"
        for key in case.expect
        if not is_operator_key(key) and key not in RUNNER_OBSERVED_KEYS
    ]
    value_key = _most_common(plain) if plain else "output"
    placement: dict[str, tuple[str, str, str | None]] = {}
    for kind in ("example", "rejection", "bound"):
        spots = [
            (CASE_CLASS_TO_ARRAY[case.case_class], case.category, case.severity)
            for case in suite.cases
            if _kind_of(case) == kind
        ]
        if spots:
            placement[kind] = _most_common(spots)
    return SuiteShape(input_key, value_key, placement)


def _toml_value(text: str) -> tuple[bool, Any]:
    """``text`` read as one TOML value (``3``, ``0.5``, ``"x"``, ``[1, 2]``)."""
    try:
        return True, tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        return False, None


def _example_expect(value: Any, shape: SuiteShape) -> dict[str, Any]:
    """The expectation of an example whose text gives ``value``. A table that holds the
    suite's value key (`{ directives = { … } }` where cases compare ``directives``) is
    the whole returned table, the observation itself, never the value of that key; a
    table with a key spelled like an operator or a runner-observed key stays a value."""
    if (
        isinstance(value, dict)
        and shape.value_key in value
        and not any(is_operator_key(k) or k in RUNNER_OBSERVED_KEYS for k in value)
    ):
        return dict(value)
    return {shape.value_key: value}


def _bound_ms(text: str) -> int | None:
    match = _BOUND.search(text)
    if match is None:
        return None
    raw = (match["number"] or "one").lower().replace(",", "")
    number = float(_NUMBER_WORDS[raw]) if raw in _NUMBER_WORDS else float(raw)
    unit = match["unit"].lower().rstrip("s") or "s"
    if match["unit"].lower() in ("ms", "s"):
        unit = match["unit"].lower()
    return round(number * _UNIT_MS.get(unit, 1000))


@dataclass(frozen=True)
class _Proposal:
    kind: DraftKind
    input: Mapping[str, Any] | None
    expect: Mapping[str, Any] | None
    why: str
    label: Enforceability


def _sentence(text: str, at: int) -> str:
    """The sentence of ``text`` around index ``at`` (a full stop inside backticks, as
    in `1.2.3`, ends none), shortened, as the draft's ``why`` quotes it."""
    ticks = [i for i, char in enumerate(text) if char == "`"]
    ends = [
        m.end()
        for m in _SENTENCE_END.finditer(text)
        if sum(1 for t in ticks if t < m.start()) % 2 == 0
    ]
    start = max((end for end in ends if end <= at), default=0)
    stop = min((end for end in ends if end > at), default=len(text))
    sentence = " ".join(text[start:stop].split())
    return sentence if len(sentence) <= 120 else sentence[:117].rstrip() + "..."


def _from(text: str, at: int) -> str:
    return f' (from "{_sentence(text, at)}")'


def _rejection_expect(text: str) -> dict[str, Any]:
    expect: dict[str, Any] = {"rejects": True}
    error_type = _ERROR_TYPE.search(text)
    if error_type is not None:
        expect["error_type"] = error_type[1]
    # A quote inside backticks is part of an input (`ext="abc`), never a phrase.
    outside_code = re.sub(r"`[^`]*`", lambda code: " " * len(code[0]), text)
    quoted = _QUOTED.search(outside_code)
    if quoted is not None:
        expect[ERROR_INCLUDES.name] = quoted[1] or quoted[2]
    return expect


def _proposals(text: str, shape: SuiteShape) -> list[_Proposal]:
    """Every draft the constraint's own words support, strongest first."""
    subjective = _SUBJECTIVE.search(text)
    if subjective is not None:
        return [
            _Proposal(
                "open",
                None,
                None,
                f'"{subjective[0]}" is a judgement no runner can make as written',
                "not-mechanical",
            )
        ]
    found: list[_Proposal] = []
    key = shape.input_key
    # "`f` returns `false` for `1.2`" is the input `1.2`, not `f`: a value followed by
    # its input wins over the same value read as "`f` returns `false`".
    inputs_after = list(_EXAMPLE_FOR.finditer(text))
    claimed = {m.start("value") for m in inputs_after}
    examples = sorted(
        [*(m for m in _EXAMPLE.finditer(text) if m.start("value") not in claimed), *inputs_after],
        key=lambda m: m.start(),
    )
    not_toml: str | None = None
    for match in examples:
        ok, value = _toml_value(match["value"])
        if not ok:
            not_toml = not_toml or match["value"]
            continue
        example = f"`{match['input']}` is `{match['value']}`" + _from(text, match.start())
        if key is None:
            found.append(
                _Proposal(
                    "example",
                    None,
                    _example_expect(value, shape),
                    f"the text's example {example}, but the suite's cases take no single "
                    "string input to hold it",
                    "needs-input",
                )
            )
        else:
            found.append(
                _Proposal(
                    "example",
                    {key: match["input"]},
                    _example_expect(value, shape),
                    f"the text's example {example}",
                    "mechanical",
                )
            )
    rejects = _REJECTION.search(text)
    if rejects is not None:
        expect = _rejection_expect(text)
        refused: list[tuple[str, str, int]] = []
        for match in (*_BAD_EXAMPLES.finditer(text), *_REJECTS_INPUTS.finditer(text)):
            items = match["items"] or match.groupdict().get("items2") or ""
            word = " ".join((match["word"] or match.groupdict().get("word2") or "").split())
            for item in re.findall(r"`([^`]+)`", items):
                if _ERROR_TYPE.fullmatch(item) or any(item == seen for seen, _, _ in refused):
                    continue
                refused.append((item, word, match.start()))
        refused.sort(key=lambda found_item: found_item[2])
        if refused and key is not None:
            for item, word, at in refused:
                found.append(
                    _Proposal(
                        "rejection",
                        {key: item},
                        expect,
                        f"the text says `{item}` {_said(word)}{_from(text, at)}",
                        "mechanical",
                    )
                )
        else:
            found.append(
                _Proposal(
                    "rejection",
                    None,
                    expect,
                    f'the text asks for a rejection ("{rejects[0]}") but gives no input '
                    "that must be refused",
                    "needs-input",
                )
            )
    bound = _bound_ms(text)
    if bound is not None:
        found.append(
            _Proposal(
                "bound",
                None,
                {f"elapsed_ms{BOUND_MAX.name}": bound},
                f"the text states a time bound ({bound} ms) but no input to time",
                "needs-input",
            )
        )
    if not found and not_toml is not None:
        shown = not_toml if len(not_toml) <= 60 else not_toml[:57] + "..."
        found.append(
            _Proposal(
                "open",
                None,
                None,
                f"the text's example gives `{shown}`, which is not a TOML value (written as "
                'one, `{ key = 1 }` rather than `{"key": 1}`, it becomes a draft): a person '
                "must write an input and an expectation",
                "needs-input",
            )
        )
    if not found:
        found.append(
            _Proposal(
                "open",
                None,
                None,
                "the text states no example, rejection or bound: a person must write an "
                "input and an expectation",
                "needs-input",
            )
        )
    return found


def _said(word: str) -> str:
    """How a draft's ``why`` repeats the rejection word: "is malformed", "raises"."""
    for start, said in (
        (("rejects", "reject", "refuse", "must"), "is rejected"),
        (("raise",), "raises"),
        (("throw",), "throws"),
        (("fail",), "fails"),
        (("error", "is an error"), "is an error"),
    ):
        if word.startswith(start):
            return said
    return f"is {word}"


_SUFFIX = {"example": "example", "rejection": "rejects", "bound": "bound", "open": "case"}


def _unique(base: str, taken: set[str]) -> str:
    name = base
    number = 2
    while name in taken:
        name = f"{base}-{number}"
        number += 1
    taken.add(name)
    return name


def _constraints(coverage: Coverage) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.name, c.text, c.cases) for c in coverage.constraints]


def assess(coverage: Coverage, suite: Suite) -> tuple[Assessment, ...]:
    """Each constraint's label: mechanical when a case covers it or its text yields a
    complete draft; otherwise the label of the best draft, with why."""
    shape = learn_shape(suite)
    out = []
    for name, text, cases in _constraints(coverage):
        proposals = _proposals(text, shape)
        if cases:
            out.append(
                Assessment(name, text, "mechanical", True, f"verified by {len(cases)} case(s)")
            )
            continue
        best = min(proposals, key=lambda p: ENFORCEABILITY.index(p.label))
        out.append(Assessment(name, text, best.label, False, best.why))
    return tuple(out)


def derive(
    suite: Suite,
    coverage: Coverage,
    *,
    every: bool = False,
    skip: Iterable[str] = (),
) -> Derivation:
    """Drafts for every constraint no case verifies (``every``: also more mechanical
    ones for those that have cases), in the order of the constraints.

    ``skip`` names drafts not to propose again (discarded ones). A draft whose input
    some case of the suite already uses is not proposed. Names never clash with the
    suite's case names, and are the same each time for the same inputs.
    """
    shape = learn_shape(suite)
    used = {case.name for case in suite.cases}
    skipped = set(skip)
    known_inputs = [dict(case.input) for case in suite.cases]
    drafts: list[Draft] = []
    for name, text, cases in _constraints(coverage):
        if cases and not every:
            continue
        for proposal in _proposals(text, shape):
            if cases and proposal.label != "mechanical":
                continue
            if proposal.input is not None and dict(proposal.input) in known_inputs:
                continue
            array, category, severity = shape.place(proposal.kind)
            base = f"{name}-{_SUFFIX[proposal.kind]}"
            draft_name = _unique(base, used)
            if draft_name in skipped:
                continue
            drafts.append(
                Draft(
                    name=draft_name,
                    constraint=name,
                    array=array,
                    category=category,
                    enforceability=proposal.label,
                    why=proposal.why,
                    description=_describe(name, text),
                    input=proposal.input,
                    expect=proposal.expect,
                    severity=severity if array == "adversarial" else None,
                )
            )
            if proposal.input is not None:
                known_inputs.append(dict(proposal.input))
    return Derivation(assess(coverage, suite), tuple(drafts))


def _describe(name: str, text: str) -> str:
    first = " ".join(text.split())
    if len(first) > 160:
        first = first[:157].rstrip() + "..."
    return f"{name}: {first}"


def coverage_figures(coverage: Coverage, suite: Suite) -> CoverageFigures:
    """The figures a recorded run keeps: covered, verified, enforceable, needs-repair."""
    assessments = assess(coverage, suite)
    enforceable = sum(1 for a in assessments if a.label == "mechanical")
    return CoverageFigures(
        total=coverage.total,
        covered=coverage.covered,
        verified=coverage.verified if coverage.evaluated else None,
        enforceable=enforceable,
        needs_repair=coverage.total - enforceable,
    )
