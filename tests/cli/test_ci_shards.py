"""The worked example of docs/ci.md, run locally: N shard jobs as the GitHub Action
runs them, then the merge job's commands word for word, publishing one verdict, one
HTML report and one job summary of the whole run (three in-process runs and a merge:
about a second on a quiet machine)."""

from __future__ import annotations

import glob
import json
import re
import shlex
from pathlib import Path

import pytest

import support
from cer.cli.github_action import ActionInputs, cer_command
from cer.cli.main import main
from support import Module

DOC = support.ROOT / "docs" / "ci.md"
SECTION = "### N shards, one verdict, one report, one job summary"

SUITE = 'commonsformat_evals = "0.2"\ntarget = "t"\n\n' + "".join(
    f'[[cases]]\nname = "case-{n}"\ncategory = "functional"\n'
    f"input = {{ x = {n} }}\nexpect = {{ output = {n * 2} }}\n\n"
    for n in range(7)
)


def workflow() -> tuple[list[str], list[str]]:
    """The example's shard matrix, and the merge job's ``run`` lines in order."""
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index(SECTION) :]
    block = block[block.index("```yaml") : block.index("```\n", block.index("```yaml") + 7)]
    shards = re.search(r"matrix: \{shard: \[(.*)\]\}", block)
    assert shards is not None
    merge = block[block.index("  merge:") :]
    runs = re.findall(r"^\s+(?:- )?run: (.*)$", merge, flags=re.MULTILINE)
    return [s.strip().strip('"') for s in shards.group(1).split(",")], runs


def shell_words(line: str, cwd: Path) -> list[str]:
    """A ``run`` line as the runner's shell would split and expand it."""
    words: list[str] = []
    for word in shlex.split(line):
        if "*" in word:
            found = sorted(glob.glob(str(cwd / word)))
            assert found, word
            words += [str(Path(path).relative_to(cwd)) for path in found]
        else:
            words.append(word)
    return words


def test_the_sharded_workflow_publishes_one_verdict_report_and_summary(
    module: Module, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module.suite(SUITE)
    impl = module.impl("def f(x):\n    return 0 if x == 3 else x * 2\n")
    monkeypatch.chdir(module.root)
    shards, runs = workflow()
    assert len(shards) >= 2
    for shard in shards:  # each shard job: the action's command line for its shard
        inputs = ActionInputs(suite="evals.toml", impl=f"{impl}:f", shard=shard)
        # download-artifact puts each shard's report folder under its artifact's name.
        inputs = ActionInputs(**{**inputs.__dict__, "report_dir": inputs.artifact_name})
        command = cer_command(inputs)
        argv = command[command.index("cer.cli") + 1 :]  # past `python -I -m cer.cli`
        assert argv[0] == "run" and argv[-2:] == ["--report", "github"]
        main(argv[:-2])  # the annotations go to the log, not to a file
        assert (module.root / inputs.artifact_name / "cer-results.json").is_file()
    capsys.readouterr()
    merge = [line for line in runs if line.startswith("cer merge")]
    assert len(merge) == 1
    code = main(shell_words(merge[0], module.root)[1:])
    out = capsys.readouterr().out
    assert code == 1  # as cer run of the whole suite: case-3 fails
    assert "7 cases: 6 passed, 1 failed" in out and "nonconformant" in out
    merged = json.loads((module.root / "cer-merged" / "cer-results.json").read_text())
    assert len(merged["results"]) == 7
    assert merged["conformance"]["statement"].startswith("nonconformant")
    page = (module.root / "cer-merged" / "cer-report.html").read_text(encoding="utf-8")
    assert all(f"case-{n}" in page for n in range(7)) and "in another shard" not in page
    summary = (module.root / "cer-merged" / "cer-summary.md").read_text(encoding="utf-8")
    assert "nonconformant" in summary and "`6` | `0`" in summary
    # The job summary step appends the Markdown report as it is.
    cat = [line for line in runs if "GITHUB_STEP_SUMMARY" in line]
    assert cat == ['cat cer-merged/cer-summary.md >> "$GITHUB_STEP_SUMMARY"']
