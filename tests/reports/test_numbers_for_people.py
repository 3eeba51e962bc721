"""Numbers as people read them: a measurement held to a bound (``elapsed_ms``,
``resident_memory_mb``, a ``_s`` key) is shown with its unit and only the decimals that
tell it from the bound, in every reason and in the reports' observed panels, while a
value compared for equality stays exact (``0.30000000000000004`` against ``0.3``)."""

from __future__ import annotations

import re
from html import unescape

import pytest

from cer.cli.main import main
from cer.judge.compare import compare, for_people, shown_measurement, shown_mismatch_observed
from support import Module


@pytest.mark.parametrize(
    ("base", "value", "bounds", "shown"),
    [
        ("resident_memory_mb", 512.34375, (100,), "512 MB"),
        ("resident_memory_mb", 512.34375, (512,), "512.3 MB"),
        ("resident_memory_mb", 100.0004, (100, 50), "100.0004 MB"),
        ("elapsed_ms", 1129.4466920007835, (1000,), "1129 ms"),
        ("elapsed_ms", 7.25, (), "7.2 ms"),
        ("parse_duration_s", 0.7000000000000001, (0.5,), "0.7 s"),
        ("score", 0.7000000000000001, (0.5,), "0.7000000000000001"),  # no unit: exact
    ],
)
def test_a_measurement_is_told_apart_from_its_bounds(
    base: str, value: float, bounds: tuple[float, ...], shown: str
) -> None:
    assert for_people(base, value, *bounds) == shown


def test_memory_and_float_mismatches() -> None:
    (memory,) = compare({"resident_memory_mb_max": 512}, {"resident_memory_mb": 512.34375})
    assert memory.message.endswith("expected resident_memory_mb <= 512, observed 512.3 MB")
    assert memory.observed == 512.34375  # the evidence keeps the exact value
    assert shown_mismatch_observed(memory) == "512.3 MB"
    (equal,) = compare({"output": 0.3}, {"output": 0.30000000000000004})
    assert "expected float 0.3, observed float 0.30000000000000004" in equal.message
    assert shown_mismatch_observed(equal) is None
    (reported,) = compare({"ratio_max": 1}, {"ratio": 1.0000000000000002})
    assert "observed 1.0000000000000002" in reported.message  # no unit: exact
    assert shown_mismatch_observed(reported) is None
    # Compared for equality, a measurement-named key stays exact too.
    assert shown_measurement("parse_s", 0.1 + 0.2, {"parse_s": 0.3}) is None
    assert shown_measurement("parse_s", 0.1 + 0.2, {"parse_s_max": 0.3}) == "0.30000000000000004 s"
    assert shown_measurement("parse_s", 0.25, {"parse_s_max": 0.3}) == "0.2 s"
    assert shown_measurement("elapsed_ms", 12, {}) is None  # an int is already readable


SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "slow"
category = "timing"
input = { n = 1 }
expect = { output = 1, elapsed_ms_max = 100 }

[[cases]]
name = "float"
category = "functional"
input = { n = 2 }
expect = { output = 0.3 }

[[cases]]
name = "reported"
category = "functional"
input = { n = 3 }
expect = { output = 3, parse_duration_s_max = 0.5, self_reported = ["parse_duration_s"] }
"""

IMPL = """\
import time

def f(n):
    if n == 1:
        time.sleep(0.15)
    if n == 2:
        return 0.1 + 0.2
    if n == 3:
        return {"output": 3, "parse_duration_s": 0.7000000000000001}
    return n
"""

RAW_TIME = re.compile(r"elapsed_ms\W+(\d+\.\d{3,}|\d+\.\d+(?!\d| ms))")
"""A raw elapsed time, such as ``elapsed_ms = 152.48...`` or ``"elapsed_ms": 152.4``;
not one shown for people, which keeps one decimal below 10 ms (``7.8 ms``): a case
that quick is no raw value."""


def test_the_reports_show_measurements_for_people_and_compared_values_exactly(
    module: Module, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    module.suite(SUITE)
    module.impl(IMPL, name="numbers")
    monkeypatch.chdir(module.root)
    reports = ["--report", "html=r.html", "--report", "markdown=r.md", "--report", "junit=r.xml"]
    assert main(["run", "evals.toml", "--impl", "numbers:f", "--no-history", *reports]) == 1
    text = capsys.readouterr().out
    assert re.search(r"expected elapsed_ms <= 100, observed \d+ ms\n", text), text
    assert "expected float 0.3, observed float 0.30000000000000004" in text
    assert "expected parse_duration_s <= 0.5, observed 0.7 s" in text

    page = unescape((module.root / "r.html").read_text())
    markdown = unescape((module.root / "r.md").read_text())
    junit = (module.root / "r.xml").read_text()
    for name, document in (("html", page), ("markdown", markdown), ("junit", junit)):
        assert not RAW_TIME.search(document), (name, RAW_TIME.search(document))
        assert "0.30000000000000004" in document, name  # compared for equality: exact
    assert re.search(r"elapsed_ms = \d+ ms\b", page)  # the observed panel
    assert "parse_duration_s = 0.7 s" in page
    assert re.search(r"elapsed_ms = \d+ ms", markdown)
    assert "output = 0.30000000000000004" in page
