"""One cause, one message: an implementation that cannot be loaded (Python) or started
(a command) is said once, naming its kind and how it failed, and each of its cases is
errored ``not run: <cause>``, never counted as passed, on every surface of ``cer run``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html import unescape

import pytest

from cer.cli.main import main
from support import Module

SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "a"
category = "functional"
input = { n = 1 }
expect = { output = 1 }

[[cases]]
name = "b"
category = "functional"
input = { n = 2 }
expect = { output = 2 }

[[cases]]
name = "c"
category = "functional"
input = { n = 3 }
expect = { output = 3 }
"""

PYTHON_CAUSE = (
    "the Python implementation broken:f could not be loaded: "
    "ModuleNotFoundError: No module named 'no_such_dependency'"
)
COMMAND_CAUSE = (
    "the command implementation ./harness.sh could not be started: "
    "the harness exited with status 3 before answering start"
)


@pytest.fixture
def kinds(module: Module) -> dict[str, tuple[list[str], str, str]]:
    """(implementation options, the cause, the text report's summary) of each kind."""
    module.suite(SUITE)
    module.impl("import no_such_dependency\n\ndef f(n):\n    return n\n", name="broken")
    harness = module.root / "harness.sh"
    harness.write_text("#!/bin/sh\necho 'the harness says why' >&2\nexit 3\n")
    harness.chmod(0o755)
    return {
        "python": (
            ["--impl", "broken:f"],
            PYTHON_CAUSE,
            "‼ ERROR 3 cases not run: the Python implementation could not be loaded (above)",
        ),
        "command": (
            ["--impl-cmd", "./harness.sh"],
            COMMAND_CAUSE,
            "‼ ERROR 3 cases not run: the command implementation could not start (above)",
        ),
    }


@pytest.mark.parametrize("kind", ["python", "command"])
def test_a_cause_is_said_once_and_its_cases_are_not_run(
    module: Module,
    kinds: dict[str, tuple[list[str], str, str]],
    kind: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    impl, cause, summary = kinds[kind]
    monkeypatch.chdir(module.root)
    run = ["run", "evals.toml", *impl, "--no-history"]

    # Text: the cause on the first line, once; one line for the cases, none per case.
    assert main(run) == 1
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith(f"note: {cause}")
    assert text.count(cause.split(": ", 1)[1]) == 1
    assert summary in lines
    assert "not run:" not in text.replace(summary, "")
    assert "3 cases: 0 passed, 0 failed, 3 errored, 0 skipped" in text

    # JSON, JUnit and TAP from one run: the cause once per document (JUnit: per test
    # suite), every case errored "not run: <cause>".
    reports = ["--report", "junit=r.xml", "--report", "tap=r.tap"]
    reports += ["--report", "html=r.html", "--report", "markdown=r.md"]
    assert main([*run, "--format", "json", *reports]) == 1
    document = json.loads(capsys.readouterr().out)
    notes = [note for note in document["run"]["notes"] if note.startswith(cause)]
    assert len(notes) == 1
    assert [r["status"] for r in document["results"]] == ["errored"] * 3
    assert {r["reason"] for r in document["results"]} == {f"not run: {cause}"}
    assert document["summary"]["cases_passed"] == 0
    assert document["summary"]["verdict"] == "nonconformant"

    tree = ET.parse(module.root / "r.xml")
    errors = [case.find("error") for case in tree.iter("testcase")]
    assert [e.get("message") if e is not None else None for e in errors] == [
        f"not run: {cause}"
    ] * 3
    for suite in tree.iter("testsuite"):
        said = [p.get("value") for p in suite.iter("property") if p.get("name") == "note"]
        assert [value for value in said if value and value.startswith(cause)] == [said[0]]

    tap = (module.root / "r.tap").read_text().splitlines()
    assert tap[2].startswith(f"# note: {cause}")
    assert [line for line in tap if line.startswith("not ok")] == [
        "not ok 1 - a",
        "not ok 2 - b",
        "not ok 3 - c",
    ]

    # HTML: every case has its card, saying why; the captured output (the traceback,
    # the harness's stderr) only on the first, the others pointing at it.
    page = unescape((module.root / "r.html").read_text())
    cards = page[page.index('<section id="failures">') :]
    cards = cards[: cards.index("</section>")]
    assert cards.count('<details class="case errored"') == 3
    assert cards.count(f"not run: {cause}") == 6  # each card's summary and reason
    assert cards.count('Not run for the same cause as <span class="mono">a</span>,') == 2
    evidence = "Traceback (most recent call last)" if kind == "python" else "the harness says why"
    assert cards.count(evidence) == 1

    # Markdown: the first case whole, the others by name under one line.
    markdown = unescape((module.root / "r.md").read_text())
    assert markdown.count("<details") == 1
    assert "3 cases not run for one cause, shown with the first (a) below; the others: b, c" in (
        markdown.replace("`", "")
    )
