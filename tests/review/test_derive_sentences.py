"""derive reads constraint sentences as people write them: every sentence of
tests/data/derive_sentences.toml gives exactly the drafts listed with it, and each
draft says which sentence it came from."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

import support
from cer.review.derive import SuiteShape, _proposals

CORPUS = tomllib.loads((support.DATA / "derive_sentences.toml").read_text(encoding="utf-8"))[
    "sentence"
]
SHAPE = SuiteShape("text", "value")


@pytest.mark.parametrize("entry", CORPUS, ids=[e["text"][:40] for e in CORPUS])
def test_each_sentence_gives_its_drafts(entry: dict[str, Any]) -> None:
    text = entry["text"]
    found = _proposals(text, SHAPE)
    rejected = [p.input["text"] for p in found if p.kind == "rejection" and p.input]
    assert rejected == entry.get("rejects", []), [p.why for p in found]
    for proposal in (p for p in found if p.kind == "rejection" and p.input):
        assert proposal.label == "mechanical"
        if "error_type" in entry:
            assert proposal.expect is not None
            assert proposal.expect.get("error_type") == entry["error_type"]
        if "error_includes" in entry:
            assert proposal.expect is not None
            assert proposal.expect.get("error_includes") == entry["error_includes"]
    examples = [
        [p.input["text"], p.expect["value"]]
        for p in found
        if p.kind == "example" and p.input and p.expect
    ]
    assert examples == entry.get("examples", [])
    if entry.get("needs_input"):
        assert any(p.kind == "rejection" and p.label == "needs-input" for p in found)
    # Every draft with an input names the sentence it came from.
    for proposal in found:
        if proposal.input is not None:
            assert '(from "' in proposal.why


def test_the_sentence_quoted_is_the_one_that_gave_the_draft() -> None:
    text = (
        "Versions are compared by precedence. `01.2.3` is malformed. "
        "`1.2.3-beta` must be rejected with a `RangeError`."
    )
    whys = {p.input["text"]: p.why for p in _proposals(text, SHAPE) if p.input}
    assert whys["01.2.3"].endswith('(from "`01.2.3` is malformed.")')
    assert '(from "`1.2.3-beta` must be rejected with a `RangeError`.")' in whys["1.2.3-beta"]


def test_an_example_that_is_not_toml_is_named_as_such() -> None:
    text = '`immutable` gives `{"directives": {"immutable": true}}`.'
    (found,) = _proposals(text, SHAPE)
    assert found.label == "needs-input"
    assert found.why.startswith(
        'the text\'s example gives `{"directives": {"immutable": true}}`, which is not a TOML value'
    )
