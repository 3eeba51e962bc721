"""Derive → review → approve: drafts from constraints, approval into the suite, records.

The end-to-end tests work on a copy of examples/calc whose left-associativity cases are
removed, so that one constraint needs a case again.
"""

from __future__ import annotations

import difflib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from cer.cli.main import main
from cer.constraints import compute_coverage, parse_constraints, suite_coverage
from cer.history.database import HISTORY_VERSION, History
from cer.review.approve import ApprovalError, approve_draft, insert_case
from cer.review.derive import derive, learn_shape
from cer.review.drafts import add_drafts, drafts_path, load_drafts
from cer.review.provenance import case_text_hash, read_provenance
from cer.suite.loader import load_suite, parse_suite
from reports.test_reports import validate_json
from support import EXAMPLES, ROOT

CONSTRAINT = "left-associativity"


def _without(text: str, constraint: str) -> str:
    document = tomlkit.parse(text)
    for array in ("cases", "adversarial", "generator_adversary"):
        entries = document[array]
        for index in reversed(range(len(entries))):
            if constraint in entries[index].get("verifies", []):
                del entries[index]
    return document.as_string()


@pytest.fixture
def calc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/calc missing every case of one constraint; the cwd."""
    folder = tmp_path / "calc"
    shutil.copytree(EXAMPLES / "calc", folder, ignore=shutil.ignore_patterns(".cer", "__pycache__"))
    suite = folder / "evals.toml"
    suite.write_text(_without(suite.read_text(encoding="utf-8"), CONSTRAINT), encoding="utf-8")
    monkeypatch.chdir(folder)
    return folder


def cer(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def only_insertion(before: str, after: str) -> list[str]:
    """The lines ``after`` adds to ``before``; fails when anything else changed."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    changes = [
        op
        for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    assert len(changes) == 1, changes
    tag, i1, i2, j1, j2 = changes[0]
    assert tag == "insert" and i1 == i2
    inserted = new[j1:j2]
    assert "".join(old[:i1] + inserted + old[i1:]) == after
    return inserted


# --- end to end ---------------------------------------------------------------------------


def test_derive_then_approve_restores_coverage(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite_path = calc / "evals.toml"
    before = suite_path.read_bytes()
    coverage = suite_coverage(load_suite(suite_path))
    assert coverage is not None and coverage.needs_a_case == (CONSTRAINT,)

    code, out, _ = cer(capsys, "derive")
    assert code == 0
    assert out.splitlines()[0] == "15 of 15 constraints mechanically enforceable"
    assert "+ left-associativity-example  [mechanical]" in out
    assert suite_path.read_bytes() == before  # derive never writes the suite
    (draft,) = load_drafts(calc / "evals.drafts.toml").drafts
    assert draft.input == {"expr": "10 - 4 - 3"}
    assert draft.expect == {"value": 3}
    assert draft.enforceability == "mechanical"

    code, out, _ = cer(capsys, "approve", draft.name, "--approver", "Ada Lovelace")
    assert code == 0, out
    after = suite_path.read_text(encoding="utf-8")
    inserted = only_insertion(before.decode("utf-8"), after)
    assert inserted[0] == "\n"
    assert inserted[1].startswith("# cer: approved by Ada Lovelace at ")
    assert inserted[2] == "[[cases]]\n"
    assert 'input = { expr = "10 - 4 - 3" }\n' in inserted
    assert f'verifies = ["{CONSTRAINT}"]\n' in inserted

    suite = load_suite(suite_path)
    coverage = suite_coverage(suite)
    assert coverage is not None and coverage.needs_a_case == ()
    assert load_drafts(calc / "evals.drafts.toml").drafts == ()

    code, out, _ = cer(capsys, "run", "evals.toml", "--impl", "calc_ref:evaluate", "-q")
    assert code == 0
    assert "15 of 15 constraints covered, 15 verified" in out


def test_derive_is_deterministic(calc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cer(capsys, "derive")[0] == 0
    first = (calc / "evals.drafts.toml").read_bytes()
    (calc / "evals.drafts.toml").unlink()
    assert cer(capsys, "derive", "--all")[0] == 0
    assert cer(capsys, "derive")[0] == 0
    again = (calc / "evals.drafts.toml").read_bytes()
    assert cer(capsys, "derive", "--all")[0] == 0
    assert (calc / "evals.drafts.toml").read_bytes() == again
    (calc / "evals.drafts.toml").unlink()
    assert cer(capsys, "derive")[0] == 0
    assert (calc / "evals.drafts.toml").read_bytes() == first


def test_drafts_never_change_a_run(calc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = ("run", "evals.toml", "--impl", "calc_sloppy:evaluate", "--format", "json", "-q")
    code_before, out, _ = cer(capsys, *run)
    summary_before = json.loads(out)["summary"]
    assert cer(capsys, "derive", "--all")[0] == 0
    # A draft that fails against any implementation, sitting in the drafts file.
    drafts = calc / "evals.drafts.toml"
    drafts.write_text(
        drafts.read_text(encoding="utf-8").replace(
            "expect = { value = 3 }", "expect = { value = 999 }"
        ),
        encoding="utf-8",
    )
    code_after, out, _ = cer(capsys, *run)
    assert code_after == code_before == 1
    assert json.loads(out)["summary"] == summary_before
    _, out, _ = cer(capsys, "history", "--format", "json")
    totals = [r["summary"]["cases_total"] for r in json.loads(out)["runs"]]
    assert totals == [summary_before["cases_total"]] * 2


def test_approval_is_recorded_and_shown_in_the_manifest(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cer(capsys, "derive")[0] == 0
    assert cer(capsys, "approve", "left-associativity-example", "--approver", "Ada")[0] == 0
    code, out, _ = cer(capsys, "history", "--approvals", "--format", "json")
    assert code == 0
    (event,) = json.loads(out)["approvals"]
    case = load_suite(calc / "evals.toml").case("left-associativity-example")
    assert event["case"] == case.name
    assert event["constraints"] == [CONSTRAINT]
    assert event["approver"] == "Ada"
    assert event["text_sha256"] == case_text_hash(case)
    assert event["from_observation"] is False
    code, out, _ = cer(capsys, "history", "--approvals")
    assert "left-associativity-example" in out and "as written" in out

    code, _, _ = cer(
        capsys, "run", "evals.toml", "--impl", "calc_ref:evaluate", "-q",
        "--report", "manifest=m.json",
    )  # fmt: skip
    assert code == 0
    manifest = json.loads((calc / "m.json").read_text(encoding="utf-8"))
    assert validate_json(manifest, "manifest.schema.json") == []
    assert manifest["conformance"] == "conformant, 15 of 15 constraints covered"
    origins = {a["id"]: (a["origin"], a["approved_by"]) for a in manifest["assertions"]}
    assert origins["left-associativity-example"] == ("approved", "Ada")
    assert origins["integer-literal"] == ("hand-written", None)


def test_manifest_states_k_of_n_when_constraints_lack_cases(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = cer(
        capsys, "run", "evals.toml", "--impl", "calc_ref:evaluate", "-q",
        "--report", "manifest=m.json",
    )  # fmt: skip
    assert code == 0
    manifest = json.loads((calc / "m.json").read_text(encoding="utf-8"))
    assert manifest["summary"]["verdict"] == "passed"
    assert (
        manifest["conformance"] == "passed, coverage incomplete: 1 of 15 constraints without a case"
    )
    assert validate_json(manifest, "manifest.schema.json") == []


def test_a_case_edited_after_approval_is_told_apart(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cer(capsys, "derive")[0] == 0
    assert cer(capsys, "approve", "left-associativity-example", "--approver", "Ada")[0] == 0
    suite_path = calc / "evals.toml"
    provenance = read_provenance(load_suite(suite_path))
    assert provenance is not None
    assert provenance["left-associativity-example"].origin == "approved"
    text = suite_path.read_text(encoding="utf-8")
    suite_path.write_text(text.replace('"10 - 4 - 3"', '"10 - 4 - 2"'), encoding="utf-8")
    provenance = read_provenance(load_suite(suite_path))
    assert provenance is not None
    assert provenance["left-associativity-example"].origin == "edited-after-approval"
    assert provenance["left-associativity-example"].approved_by == "Ada"


def test_use_observed_takes_the_observation_on_purpose(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite_path = calc / "evals.toml"
    suite_path.write_text(
        _without(suite_path.read_text(encoding="utf-8"), "floor-semantics"), encoding="utf-8"
    )
    assert cer(capsys, "derive")[0] == 0
    drafts = calc / "evals.drafts.toml"
    text = drafts.read_text(encoding="utf-8")
    assert 'name = "floor-semantics-case"\n' in text
    drafts.write_text(
        text.replace(
            'name = "floor-semantics-case"\n',
            'name = "floor-semantics-case"\ninput = { expr = "7 // -2" }  # by hand\n',
        ),
        encoding="utf-8",
    )
    code, out, err = cer(capsys, "approve", "floor-semantics-case")
    assert code == 1
    assert "has no expectation" in err
    code, out, _ = cer(capsys, "derive", "--impl", "calc_ref:evaluate")
    assert code == 0
    assert "observed (1):\n  + floor-semantics-case" in out
    assert '{"value": -4} (from calc_ref:evaluate)' in out
    # What to do with it is said where it is shown.
    assert (
        "\n      to take it as the expectation: cer approve floor-semantics-case --use-observed\n"
        in out
    )
    draft = load_drafts(drafts).get("floor-semantics-case")
    assert draft.observed == {"value": -4}
    assert draft.expect is None
    assert "# by hand" in drafts.read_text(encoding="utf-8")  # edits and comments survive
    code, out, _ = cer(
        capsys, "approve", "floor-semantics-case", "--use-observed", "--approver", "Grace"
    )
    assert code == 0
    assert "expectation from an observation" in out
    case = load_suite(suite_path).case("floor-semantics-case")
    assert case.expect == {"value": -4}
    assert ", expectation observed, sha256 " in suite_path.read_text(encoding="utf-8")
    code, out, _ = cer(capsys, "history", "--approvals", "--format", "json")
    (event,) = json.loads(out)["approvals"]
    assert event["from_observation"] is True
    assert event["observed_from"] == "calc_ref:evaluate"


def test_incomplete_or_unknown_drafts_are_refused(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite_path = calc / "evals.toml"
    suite_path.write_text(
        _without(suite_path.read_text(encoding="utf-8"), "rejects-division-by-zero"),
        encoding="utf-8",
    )
    assert cer(capsys, "derive")[0] == 0
    before = suite_path.read_bytes()
    code, _, err = cer(capsys, "approve", "rejects-division-by-zero-rejects", "no-such-draft")
    assert code == 1
    assert "has no input" in err
    assert "no draft named 'no-such-draft'" in err
    assert suite_path.read_bytes() == before
    draft = load_drafts(calc / "evals.drafts.toml").get("rejects-division-by-zero-rejects")
    assert draft.expect == {
        "rejects": True,
        "error_type": "ZeroDivisionError",
        "error_includes": "division by zero",
    }
    assert draft.array == "adversarial"


def test_discarded_drafts_are_not_proposed_again(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cer(capsys, "derive")[0] == 0
    code, out, _ = cer(capsys, "discard", "left-associativity-example")
    assert code == 0
    drafts = load_drafts(calc / "evals.drafts.toml")
    assert drafts.drafts == ()
    assert drafts.discarded == ("left-associativity-example",)
    code, out, _ = cer(capsys, "derive")
    assert "no new drafts" in out
    assert load_drafts(calc / "evals.drafts.toml").drafts == ()


def test_history_keeps_coverage_per_run(calc: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = ("run", "evals.toml", "--impl", "calc_ref:evaluate", "-q")
    assert cer(capsys, *run)[0] == 0
    assert cer(capsys, "derive")[0] == 0
    assert cer(capsys, "approve", "left-associativity-example", "--approver", "A")[0] == 0
    assert cer(capsys, *run)[0] == 0
    _, out, _ = cer(capsys, "history", "--format", "json")
    figures = [r["coverage"] for r in json.loads(out)["runs"]]
    assert [(f["constraints_covered"], f["constraints_verified"]) for f in figures] == [
        (15, 15),
        (14, 14),
    ]
    assert all(f["constraints_total"] == 15 for f in figures)
    _, out, _ = cer(capsys, "history")
    assert "15/15 ✓15" in out.splitlines()[1]
    assert "14/15 ✓14" in out.splitlines()[2]


def test_a_version_1_history_gains_the_new_tables(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    History.open(path).close()
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE cer_approvals")
        db.execute("DROP TABLE cer_run_coverage")
        db.execute("UPDATE cer_meta SET value = '1' WHERE key = 'history_version'")
    with History.open(path) as history:
        assert history.approvals() == ()
    with sqlite3.connect(path) as db:
        version = db.execute("SELECT value FROM cer_meta WHERE key = 'history_version'")
        assert version.fetchone()[0] == str(HISTORY_VERSION)


# --- derive on its own ---------------------------------------------------------------


def _suite(text: str, tmp_path: Path) -> Any:
    return parse_suite(text, tmp_path / "evals.toml")


SMALL = """\
commonsformat_evals = "0.2"

[[cases]]
name = "one"
category = "functional"
input = { expr = "1" }
expect = { value = 1 }
"""


@pytest.mark.parametrize(
    ("text", "label", "expect"),
    [
        ("the output is readable", "not-mechanical", None),
        ("a long sum takes well under two seconds", "needs-input", {"elapsed_ms_max": 2000}),
        ("`2 ** 3` is `8`", "mechanical", {"value": 8}),
        ("`2 ** 3 ** 2` is `2 ** 9`", "needs-input", None),
        (
            'empty input raises ValueError mentioning "empty"',
            "needs-input",
            {"rejects": True, "error_type": "ValueError", "error_includes": "empty"},
        ),
    ],
)
def test_labels_follow_the_constraint_text(
    text: str, label: str, expect: dict[str, Any] | None, tmp_path: Path
) -> None:
    suite = _suite(SMALL, tmp_path)
    declared = parse_constraints(f"<constraints>\n- rule: {text}\n</constraints>\n", tmp_path)
    derivation = derive(suite, compute_coverage(suite, declared))
    (draft,) = derivation.drafts
    assert draft.enforceability == label
    assert draft.expect == expect
    assert derivation.assessments[0].label == label
    assert derivation.enforceable == (1 if label == "mechanical" else 0)


def test_named_malformed_inputs_become_rejection_drafts(tmp_path: Path) -> None:
    suite = _suite(SMALL, tmp_path)
    declared = parse_constraints(
        "<constraints>\n- numbers: `.5`, `5.` and `1.2.3` are malformed and raise"
        " ValueError\n</constraints>\n",
        tmp_path,
    )
    drafts = derive(suite, compute_coverage(suite, declared)).drafts
    assert [(d.name, d.input, d.enforceability) for d in drafts] == [
        ("numbers-rejects", {"expr": ".5"}, "mechanical"),
        ("numbers-rejects-2", {"expr": "5."}, "mechanical"),
        ("numbers-rejects-3", {"expr": "1.2.3"}, "mechanical"),
    ]
    assert all(d.expect == {"rejects": True, "error_type": "ValueError"} for d in drafts)


def test_shape_is_learned_from_the_suite() -> None:
    shape = learn_shape(load_suite(EXAMPLES / "calc" / "evals.toml"))
    assert (shape.input_key, shape.value_key) == ("expr", "value")
    assert shape.place("rejection")[0] == "adversarial"
    own = learn_shape(load_suite(ROOT / "evals.toml"))
    assert own.input_key is None  # the self-suite's cases take whole modules


def test_insert_creates_a_missing_array(tmp_path: Path) -> None:
    fields = {"name": "two", "category": "input-validation", "input": {"expr": ""}}
    fields["expect"] = {"rejects": True}
    text = insert_case(SMALL, "adversarial", "rule", fields, "# cer: mark")
    inserted = only_insertion(SMALL, text)
    assert "".join(inserted) == (
        '\n# cer: mark\n[[adversarial]]\nname = "two"\ncategory = "input-validation"\n'
        'input = { expr = "" }\nexpect = { rejects = true }\n'
    )
    assert [c.name for c in _suite(text, tmp_path).cases] == ["one", "two"]


def test_insert_keeps_the_self_suite_byte_for_byte(tmp_path: Path) -> None:
    source = (ROOT / "evals.toml").read_text(encoding="utf-8")
    fields = {
        "name": "new-self-case",
        "category": "functional",
        "input": {"impl": "def f():\n    return 1\n", "suite": "x = 1\n"},
        "expect": {"statuses": ["pass"]},
        "verifies": ["deterministic-ordering"],
    }
    text = insert_case(source, "cases", "deterministic-ordering", fields, "# cer: mark")
    inserted = only_insertion(source, text)
    assert "[[cases]]\n" in inserted
    suite = _suite(text, tmp_path)
    case = suite.case("new-self-case")
    assert case.input == fields["input"]
    names = [c.name for c in suite.cases]
    anchor = [
        c.name
        for c in load_suite(ROOT / "evals.toml").cases
        if c.case_class == "functional" and "deterministic-ordering" in c.verifies
    ][-1]
    assert names.index("new-self-case") == names.index(anchor) + 1


def test_approving_keeps_comments_of_the_drafts_file(tmp_path: Path) -> None:
    suite_path = tmp_path / "evals.toml"
    suite_path.write_text(SMALL, encoding="utf-8")
    (tmp_path / "commonsformat.md").write_text(
        "<constraints>\n- a: `1 + 1` is `2`\n- b: `2 + 2` is `4`\n</constraints>\n",
        encoding="utf-8",
    )
    suite = load_suite(suite_path)
    coverage = suite_coverage(suite)
    assert coverage is not None
    path = drafts_path(suite_path)
    add_drafts(path, derive(suite, coverage).drafts)
    path.write_text(path.read_text(encoding="utf-8") + "# a note of mine\n", encoding="utf-8")
    approve_draft(suite_path, "a-example", approver="me")
    assert path.read_text(encoding="utf-8").endswith("# a note of mine\n")
    assert [d.name for d in load_drafts(path).drafts] == ["b-example"]
    with pytest.raises(ApprovalError, match="already has a case"):
        add_drafts(path, derive(suite, coverage).drafts)  # a-example proposed again
        approve_draft(suite_path, "a-example", approver="me")


def test_derive_impl_with_only_complete_drafts_says_what_it_observed(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = cer(capsys, "derive")
    assert code == 0
    drafts = load_drafts(calc / "evals.drafts.toml").drafts
    assert drafts and all(d.is_complete for d in drafts)
    code, out, _ = cer(capsys, "derive", "--impl", "calc_ref:evaluate")
    assert code == 0
    assert f"run as written against calc_ref:evaluate ({len(drafts)}):" in out
    assert "  left-associativity-example: pass" in out
    code, out, _ = cer(capsys, "derive", "--impl", "calc_ref:evaluate", "--format", "json")
    checked = json.loads(out)["checked"]
    assert [item["name"] for item in checked] == [d.name for d in drafts]
    assert {item["status"] for item in checked} == {"pass"}


def test_derive_impl_says_it_observed_nothing_when_no_draft_has_an_input(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite_path = calc / "evals.toml"
    suite_path.write_text(
        _without(suite_path.read_text(encoding="utf-8"), "floor-semantics"), encoding="utf-8"
    )
    assert cer(capsys, "derive")[0] == 0
    assert load_drafts(calc / "evals.drafts.toml").get("floor-semantics-case").input is None
    code, out, _ = cer(capsys, "derive", "--impl", "calc_ref:evaluate")
    assert code == 0
    assert (
        "observed against calc_ref:evaluate: nothing, no draft on file has an input and no "
        "expectation (1 need an input first: write it in evals.drafts.toml, then run "
        "cer derive --impl again)"
    ) in out
    code, out, _ = cer(capsys, "derive", "--impl", "calc_ref:evaluate", "--format", "json")
    assert json.loads(out)["observed"] == []


def test_a_draft_with_an_input_and_an_observation_no_longer_needs_input(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite_path = calc / "evals.toml"
    suite_path.write_text(
        _without(suite_path.read_text(encoding="utf-8"), "floor-semantics"), encoding="utf-8"
    )
    assert cer(capsys, "derive")[0] == 0
    drafts = calc / "evals.drafts.toml"
    text = drafts.read_text(encoding="utf-8")
    drafts.write_text(
        text.replace(
            'name = "floor-semantics-case"\n',
            'name = "floor-semantics-case"\ninput = { expr = "7 // -2" }\n',
        ),
        encoding="utf-8",
    )
    assert load_drafts(drafts).get("floor-semantics-case").enforceability == "needs-input"
    code, out, _ = cer(capsys, "derive", "--impl", "calc_ref:evaluate")
    assert code == 0
    assert "  + floor-semantics-case  [mechanical]  floor-semantics:" in out
    assert "[needs-input]" not in out.split("needs repair")[0]
    draft = load_drafts(drafts).get("floor-semantics-case")
    assert (draft.enforceability, draft.observed) == ("mechanical", {"value": -4})
    # Run again: the same observation is reported, not left out as unchanged.
    code, out, _ = cer(capsys, "derive", "--impl", "calc_ref:evaluate")
    assert "observed (1):\n  + floor-semantics-case  [mechanical]" in out


def test_drafts_follow_the_constraint_text_when_the_prose_changes(
    calc: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cer(capsys, "derive")[0] == 0
    drafts = calc / "evals.drafts.toml"
    drafts.write_text(drafts.read_text(encoding="utf-8") + "# my note\n", encoding="utf-8")
    before = load_drafts(drafts).get("left-associativity-example")
    assert (before.input, before.expect) == ({"expr": "10 - 4 - 3"}, {"value": 3})
    doc = calc / "commonsformat.md"
    doc.write_text(
        doc.read_text(encoding="utf-8").replace("`10 - 4 - 3` is `3`", "`20 - 4 - 3` is `13`"),
        encoding="utf-8",
    )
    code, out, _ = cer(capsys, "derive")
    assert code == 0
    assert "updated from the constraint's text (1):\n  ~ left-associativity-example" in out
    after = load_drafts(drafts).get("left-associativity-example")
    assert (after.input, after.expect) == ({"expr": "20 - 4 - 3"}, {"value": 13})
    assert "`20 - 4 - 3` is `13`" in after.why and "`20 - 4 - 3`" in after.description
    assert drafts.read_text(encoding="utf-8").endswith("# my note\n")
    code, out, _ = cer(capsys, "derive")
    assert "updated from" not in out  # the text did not change again


def test_a_changed_text_keeps_the_input_a_person_wrote(tmp_path: Path) -> None:
    from dataclasses import replace

    from cer.review.derive import Draft
    from cer.review.drafts import follow_text, set_observed

    derived = Draft(
        name="floor-case",
        constraint="floor",
        array="cases",
        category="functional",
        enforceability="needs-input",
        why='no example (from "`//` floors.")',
        description="floor: `//` floors.",
        input=None,
        expect=None,
    )
    path = tmp_path / "evals.drafts.toml"
    add_drafts(path, [derived])
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace(
            'name = "floor-case"\n', 'name = "floor-case"\ninput = { expr = "7 // -2" }\n'
        ),
        encoding="utf-8",
    )
    mine = load_drafts(path).get("floor-case")
    set_observed(path, {"floor-case": replace(mine, observed={"value": -4}, observed_from="x:y")})
    reworded = replace(
        derived,
        why='no example (from "`//` rounds down.")',
        description="floor: `//` rounds down.",
    )
    _, updated = follow_text(path, [reworded])
    (draft,) = updated
    assert draft.why == reworded.why and draft.input == {"expr": "7 // -2"}
    assert draft.observed == {"value": -4} and draft.enforceability == "mechanical"
    assert follow_text(path, [reworded])[1] == []


@pytest.mark.parametrize(("given", "expected"), [((), 3.0), (("--timeout", "7"), 7.0)])
def test_derive_impl_takes_the_timeout_of_tool_cer_unless_given(
    calc: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    given: tuple[str, ...],
    expected: float,
) -> None:
    import cer.review.observe as observe_module

    (calc / "pyproject.toml").write_text("[tool.cer]\ntimeout = 3\n", encoding="utf-8")
    seen: list[float] = []

    def observe(suite: Any, drafts: Any, options: Any, source: str) -> Any:
        seen.append(options.timeout)
        return tuple(drafts)

    def run_drafts(suite: Any, drafts: Any, options: Any) -> Any:
        seen.append(options.timeout)
        return []

    monkeypatch.setattr(observe_module, "observe", observe)
    monkeypatch.setattr(observe_module, "run_drafts", run_drafts)
    code, _, err = cer(capsys, "derive", "--impl", "calc_ref:evaluate", *given)
    assert code == 0, err
    assert seen and set(seen) == {expected}
