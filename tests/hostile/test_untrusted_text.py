"""What the implementation says is only data, on every surface of the command line.

Every class of :mod:`hostile_text` is sent by an implementation as a returned value, an
exception's message and captured output, through ``cer run`` (text, JSON and every
report format), ``cer derive --impl`` (text and JSON, and the drafts file it writes),
``cer approve --use-observed`` (the suite it writes) and ``cer history``. Each asserts
that nothing the implementation said reaches a terminal raw, that nothing crashes, and
that what is stored reads back as exactly what was observed (or says why it cannot).
"""

from __future__ import annotations

import json
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hostile_text import CORPUS, assert_inert, implementation, suite_lines
from markdown_inert import assert_markdown_inert

from cer.cli.main import main
from cer.reports import FORMATS, STDOUT
from cer.review.drafts import load_drafts
from cer.suite.loader import load_suite

pytestmark = pytest.mark.slow

IMPL = implementation(CORPUS)

CONSTRAINTS = """\
# hostile

<constraints>
- says-what-it-says: it answers.
</constraints>
"""


def _suite(tmp_path: Path) -> Path:
    lines = suite_lines(CORPUS, verifies="says-what-it-says")
    path = tmp_path / "evals.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    (tmp_path / "hostile_impl.py").write_text(IMPL, encoding="ascii")
    (tmp_path / "commonsformat.md").write_text(CONSTRAINTS, encoding="utf-8")
    return path


def cer(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return _suite(tmp_path)


def test_cer_run_shows_every_class_as_data(
    module: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = []
    for name, spec in FORMATS.items():
        if spec.unavailable is not None and spec.unavailable() is not None:
            continue
        target = "-" if spec.default_path == STDOUT else str(tmp_path / f"report-{name}")
        reports += ["--report", f"{name}={target}"]
    code, out, err = cer(
        capsys, "run", str(module), "--impl", "hostile_impl:f", "-v", "-q", *reports
    )
    assert code == 1
    assert_inert(out, "stdout")
    assert_inert(err, "stderr")
    for name in CORPUS:
        assert f"value-{name}" in out
    for name in FORMATS:
        path = tmp_path / f"report-{name}"
        if not path.exists():
            continue
        data = path.read_bytes()
        text = data.decode("utf-8")
        assert_inert(text, f"{name} report")
        if name == "html":
            assert "<script>alert(1)" not in text
            assert "&lt;script&gt;alert(1)" in text
        if name == "junit":
            ET.fromstring(data)
        if path.read_bytes()[:1] in (b"{", b"["):
            json.loads(text)
    code, out, err = cer(capsys, "run", str(module), "--impl", "hostile_impl:f", "--format", "json")
    assert code == 1
    assert_inert(out, "json stdout")
    document = json.loads(out)
    reasons = {r["case_name"]: r for r in document["results"]}
    for name in ("esc-clear", "csi-8bit", "bidi-override", "markup-close", "del-newline"):
        # JSON escapes, which a reader decodes back to exactly what was observed.
        assert reasons[f"value-{name}"]["observation"]["output"] == CORPUS[name]
    code, out, err = cer(
        capsys, "run", str(module), "--impl", "hostile_impl:f", "--format", "jsonl", "-q"
    )
    assert code == 1
    assert_inert(out + err, "jsonl stdout")
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) >= len(reasons)
    code, out, err = cer(capsys, "history")
    assert code == 0
    assert_inert(out + err, "history")
    code, out, err = cer(capsys, "history", "--case", "raise-esc-clear")
    assert_inert(out + err, "history --case")
    code, out, err = cer(capsys, "history", "--case", "raise-esc-clear", "--format", "json")
    assert_inert(out + err, "history --case --format json")
    json.loads(out)


def _drafts(module: Path) -> Path:
    path = module.with_name("evals.drafts.toml")
    lines = ["discarded = []", ""]
    for kind in ("value", "raise"):
        for name in CORPUS:
            lines += [
                "[[drafts]]",
                f'name = "{kind}-{name}-draft"',
                'constraint = "says-what-it-says"',
                'enforceability = "needs-input"',
                'why = "by hand"',
                'array = "cases"',
                'category = "functional"',
                f'input = {{ expr = "{kind}:{name}" }}',
                "",
            ]
    path.write_text("\n".join(lines), encoding="utf-8")
    # The suite itself keeps no case of these inputs: derive proposes nothing new.
    module.write_text(
        'commonsformat_evals = "0.2"\ntarget = "hostile"\n\n[[cases]]\nname = "only"\n'
        'category = "functional"\ninput = { expr = "value:html" }\n'
        'expect = { output = "<script>alert(1)</script>&amp;" }\n'
        'verifies = ["says-what-it-says"]\n',
        encoding="utf-8",
    )
    return path


NOT_HELD = ("lone-surrogate", "long-line")
"""Classes whose observed value the drafts file cannot hold whole (TOML text is UTF-8;
a value larger than cer keeps of an observation was cut): a note says so."""


def test_derive_and_approve_survive_every_observed_value(
    module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    drafts_file = _drafts(module)
    code, out, err = cer(capsys, "derive", "--impl", "hostile_impl:f")
    assert code == 0, err
    assert_inert(out, "derive stdout")
    assert_inert(err, "derive stderr")
    raw = drafts_file.read_text(encoding="utf-8")
    assert_inert(raw, "drafts file")
    tomllib.loads(raw)
    drafts = {d.name: d for d in load_drafts(drafts_file).drafts}
    assert len(drafts) == 2 * len(CORPUS)  # a value cannot add a draft (toml-breakout)
    for name, text in CORPUS.items():
        value = drafts[f"value-{name}-draft"]
        if name in NOT_HELD:
            assert value.observed is None, name
            assert (value.observed_note or "").startswith(
                "observed value not representable in TOML: "
            ), (name, value.observed_note)
        else:
            assert value.observed == {"output": text}, name
        rejected = drafts[f"raise-{name}-draft"]
        if rejected.observed is None:
            assert (rejected.observed_note or "").startswith("observed value not representable")
        else:
            assert rejected.observed["rejects"] is True
            assert rejected.observed["error_includes"] in text, name
    code, out, err = cer(capsys, "derive", "--impl", "hostile_impl:f", "--format", "json")
    assert code == 0, err
    assert_inert(out, "derive json")
    json.loads(out)

    held = [n for n in CORPUS if n not in NOT_HELD]
    names = [f"value-{n}-draft" for n in held]
    code, out, err = cer(
        capsys, "approve", *names, "--use-observed", "--approver", "\x1b[2JEve\u202e"
    )
    assert code == 0, err
    assert_inert(out + err, "approve")
    code, out, err = cer(capsys, "approve", "value-lone-surrogate-draft", "--use-observed")
    assert code == 1
    assert "carries no observed value (observed value not representable in TOML" in err
    assert_inert(out + err, "approve refused")
    suite_text = module.read_text(encoding="utf-8")
    assert_inert(suite_text, "suite")
    suite = load_suite(module)
    for name in held:
        assert suite.case(f"value-{name}-draft").expect == {"output": CORPUS[name]}, name
    # Approved from what was observed, the cases hold the implementation to exactly it.
    code, out, err = cer(
        capsys, "run", str(module), "--impl", "hostile_impl:f", "--case", "value-*", "-q"
    )
    assert code == 3, out  # the suite's own case was deselected
    assert f"{len(held)} passed, 0 failed, 0 errored" in out
    assert_inert(out + err, "run of the approved cases")
    code, out, err = cer(capsys, "history", "--approvals")
    assert code == 0
    assert_inert(out + err, "history --approvals")


def test_a_matrix_shows_every_class_as_data(
    module: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two implementations saying every class differently, one of them from a
    distribution whose metadata is hostile too: the matrix's text, JSON, HTML page and
    Markdown summary keep all of it inert."""
    (tmp_path / "hostile_two.py").write_text(
        implementation({name: f"{text}2" for name, text in CORPUS.items()}), encoding="ascii"
    )
    said = CORPUS["esc-clear"] + CORPUS["bidi-override"] + CORPUS["html"] + "|*[x](y)"
    info = tmp_path / "hostile-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {said}\nVersion: {CORPUS['osc-title']}\n",
        encoding="utf-8",
    )
    (info / "RECORD").write_text("hostile_two.py,,\n", encoding="utf-8")
    page, summary = tmp_path / "matrix.html", tmp_path / "matrix.md"
    args = ["run", str(module), "--impl", "one=hostile_impl:f", "--impl", "two=hostile_two:f"]
    code, out, err = cer(
        capsys, *args, "-v", "-q", "--report", f"html={page}", "--report", f"markdown={summary}"
    )
    assert code == 1
    assert_inert(out, "matrix stdout")
    assert_inert(err, "matrix stderr")
    assert "(\\x1b[2J\\x1b[Hall passed" in out  # the distribution's name, escaped
    assert "≠ value-esc-clear" in out
    text = page.read_text(encoding="utf-8")
    assert_inert(text, "matrix html")
    assert "<script" not in text
    assert "&lt;script&gt;alert(1)" in text
    assert "default-src 'none'" in text
    markdown = summary.read_text(encoding="utf-8")
    assert_inert(markdown, "matrix markdown")
    assert_markdown_inert(markdown, ["alert", "[x](y)", "owned"])
    code, out, err = cer(capsys, *args, "--format", "json")
    assert_inert(out + err, "matrix json")
    document = json.loads(out)
    assert document["implementations"][1]["origin"]["name"] == said
