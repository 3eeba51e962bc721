"""Attacks on what the evidence claims: an exit code, a rerun, the history, the
implementation's identity and what decided a case.

Each test is what a hostile (or merely unlucky) user can do to get a claim that was not
earned: an exit code vouching for cases that did not run, a history that trusted an
older run, an implementation id taken from a list the implementation sent. Each asserts
the truthful outcome.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from support import cer_in_process, pytest_in_process

ROOT = Path(__file__).resolve().parents[2]

SUITE = """\
commonsformat_evals = "0.2"
target = "doubler"

[[cases]]
name = "doubles-one"
category = "functional"
input = { x = 1 }
expect = { output = 2 }

[[cases]]
name = "doubles-two"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[cases]]
name = "doubles-three"
category = "functional"
input = { x = 3 }
expect = { output = 6 }
"""

GOOD = "def f(x):\n    return x * 2\n"
BROKEN = "def f(x):\n    return 0\n"
BAD_ON_ONE = "def f(x):\n    return 0 if x == 1 else x * 2\n"
BAD_ON_THREE = "def f(x):\n    return 0 if x == 3 else x * 2\n"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["NO_COLOR"] = "1"
    return env


def cer_run(
    folder: Path, source: str, *args: str, fsize: int | None = None
) -> subprocess.CompletedProcess[str]:
    """``cer run evals.toml --impl impl:f`` in ``folder`` after writing ``source`` as
    impl.py; ``fsize`` imposes a file size limit on the run from outside, on a process of
    its own. Without one the run is made in this process: its exit code, streams and
    history are the same (the implementation is imported only by the run's workers)."""
    (folder / "impl.py").write_text(source)
    if fsize is None:
        return cer_in_process(["run", "evals.toml", "--impl", "impl:f", *args], folder)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(
        [sys.executable, "-m", "cer.cli", "run", "evals.toml", "--impl", "impl:f", *args],
        cwd=folder,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


def statuses(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    document = json.loads(done.stdout)
    return {r["case_name"]: r["status"] for r in document["results"]}


@pytest.fixture
def module(tmp_path: Path) -> Path:
    (tmp_path / "evals.toml").write_text(SUITE)
    return tmp_path


# --- an exit code never claims more than ran -------------------------------------------


def test_failed_after_a_green_run_runs_the_whole_suite(module: Path) -> None:
    assert cer_run(module, GOOD).returncode == 0
    # The code now fails every case; the last recorded run was green.
    done = cer_run(module, BROKEN, "--failed", "--format", "json")
    assert done.returncode == 1, done.stderr
    assert "running the whole suite" in done.stderr
    assert statuses(done) == dict.fromkeys(("doubles-one", "doubles-two", "doubles-three"), "fail")


def test_failed_with_no_recorded_run_runs_the_whole_suite(module: Path) -> None:
    done = cer_run(module, BROKEN, "--failed", "--format", "json")
    assert done.returncode == 1, done.stderr
    assert "no recorded run" in done.stderr and "running the whole suite" in done.stderr
    assert set(statuses(done).values()) == {"fail"}


def test_a_run_that_could_not_be_recorded_is_not_forgotten_by_failed(module: Path) -> None:
    assert cer_run(module, BAD_ON_ONE).returncode == 1  # recorded: doubles-one failed
    history = module / ".cer" / "history.sqlite"
    size = history.stat().st_size
    # Imposed from outside: no file of the run may grow, so the run is not recorded.
    lost = cer_run(module, BAD_ON_THREE, fsize=1)
    assert lost.returncode == 1
    assert "this run is not recorded" in lost.stderr
    assert history.stat().st_size == size
    # doubles-one is fixed, doubles-three now fails: trusting the recorded run would
    # rerun doubles-one alone.
    done = cer_run(module, BAD_ON_THREE, "--failed", "--format", "json")
    assert done.returncode == 1, done.stderr
    assert "could not be recorded" in done.stderr
    assert statuses(done) == {
        "doubles-one": "pass",
        "doubles-two": "pass",
        "doubles-three": "fail",
    }
    # Once a whole run is recorded again, --failed trusts the history again.
    done = cer_run(module, BAD_ON_THREE, "--failed", "--format", "json")
    assert "could not be recorded" not in done.stderr
    assert statuses(done)["doubles-one"] == "skipped"


PLUGIN_SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "fine"
category = "functional"
input = { x = 1 }
expect = { output = 1 }

[[cases]]
name = "unsupported"
category = "concurrency"
input = { x = 3 }
expect = { output = 3 }
"""


def pytest_session(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """An honest pytest session over ``folder``: run in this process, since what is read
    is its report and exit code (``support.pytest_in_process``)."""
    return pytest_in_process(["-q", "-p", "no:cacheprovider", *args], folder)


def test_a_pytest_session_with_cases_cer_skipped_is_not_green(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text(PLUGIN_SUITE)
    (tmp_path / "impl.py").write_text("def f(x):\n    return x\n")
    done = pytest_session(tmp_path, "--cer-impl", "impl:f", "evals.toml")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout
    assert "— incomplete" in done.stdout  # cer's own verdict line
    assert "--cer-accept-skips" in done.stdout
    accepted = pytest_session(tmp_path, "--cer-impl", "impl:f", "evals.toml", "--cer-accept-skips")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "— incomplete" in accepted.stdout
    # Cases pytest did not select are not cer's skips: a -k run of the passing case is
    # pytest's business.
    picked = pytest_session(tmp_path, "--cer-impl", "impl:f", "evals.toml", "-k", "fine")
    assert picked.returncode == 0, picked.stdout + picked.stderr


# --- the history has a budget ------------------------------------------------------------

CHATTY_SUITE = "\n".join(
    ['commonsformat_evals = "0.2"', 'target = "chatty"']
    + [
        f'[[cases]]\nname = "c{i}"\ncategory = "functional"\ninput = {{ x = {i} }}\n'
        'expect = { output = "short" }\n'
        for i in range(200)
    ]
)
CHATTY = """\
import sys

def f(x):
    if x < 2:
        sys.stdout.write("o" * 1_000_000)
        sys.stderr.write("e" * 1_000_000)
    else:
        sys.stdout.write("o" * 40_000)
        sys.stderr.write("e" * 40_000)
    if x % 2:
        raise ValueError("r" * 1_000_000)
    return "v" * (1_000_000 if x < 2 else 40_000)
"""


def test_what_the_implementation_says_cannot_grow_the_history_without_bound(
    tmp_path: Path,
) -> None:
    from cer.engine.options import RunOptions
    from cer.engine.runner import run_suite
    from cer.history.database import History
    from cer.suite.loader import load_suite

    (tmp_path / "evals.toml").write_text(CHATTY_SUITE)
    (tmp_path / "chatty.py").write_text(CHATTY)
    suite = load_suite(tmp_path / "evals.toml")
    options = RunOptions(
        impl="chatty:f",
        paths=(str(tmp_path),),
        capture_limit=2_000_000,
        sandbox="off",
        isolation="none",  # what the history keeps is the question, not how cases ran
        timeout=20.0,
    )
    run = run_suite(suite, options)
    assert len(run.results) == 200
    path = tmp_path / "h.sqlite"
    with History.open(path) as history:
        history.record(run, suite)
        stored = history.load_run(run.run_id)
        used = history.used_bytes()
    # 200 cases said 24 MB and more; the run's evidence is kept to its budget.
    assert used < 12 * 1024 * 1024, used
    first = stored.results[0]
    assert "[cut in the history:" in first.stdout
    assert len(first.stdout) < 20_000 and len(first.stderr) < 20_000
    errored = stored.results[1]
    assert errored.reason is not None
    assert errored.reason.startswith("the implementation raised ValueError")
    assert errored.traceback is not None and "[cut in the history:" in errored.traceback
    # Past the run's budget, a case keeps its status and reason and says what was lost.
    assert [r.status for r in stored.results] == [r.status for r in run.results]
    assert any("[not stored: the run's evidence passed" in r.stdout for r in stored.results)


def test_history_max_mb_bounds_the_file_and_cer_history_shows_its_size(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.cer]\nhistory_max_mb = 1\n")
    (tmp_path / "evals.toml").write_text(SUITE)
    noisy = (
        "import sys\n\ndef f(x):\n    sys.stdout.write('n' * 60_000)\n"
        "    sys.stderr.write('n' * 60_000)\n    return 0\n"
    )
    # About 200 KB a run: the fifth passes the limit, so the sixth finds runs forgotten.
    for _ in range(6):
        assert cer_run(tmp_path, noisy, "-q").returncode == 1
    history = tmp_path / ".cer" / "history.sqlite"
    assert history.stat().st_size < 2 * 1024 * 1024
    listed = cer_in_process(["history", "--suite", "evals.toml", "-n", "50"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "history size:" in listed.stdout and "limit 1.0 MiB" in listed.stdout
    runs = [line for line in listed.stdout.splitlines() if line[:1].isdigit()]
    assert 1 <= len(runs) < 6  # the oldest runs were forgotten
    bad = tmp_path / "pyproject.toml"
    bad.write_text("[tool.cer]\nhistory_max_mb = -1\n")
    refused = cer_run(tmp_path, noisy)
    assert refused.returncode == 2 and "history_max_mb" in refused.stderr


def test_old_runs_are_forgotten_but_the_newest_of_each_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time
    from dataclasses import replace

    import cer.history.database
    from cer.engine.options import RunOptions
    from cer.engine.runner import run_suite
    from cer.history.budget import MAX_AGE_DAYS
    from cer.history.database import History
    from cer.suite.loader import load_suite

    (tmp_path / "evals.toml").write_text(SUITE)
    (tmp_path / "impl.py").write_text(GOOD)
    suite = load_suite(tmp_path / "evals.toml")
    run = run_suite(suite, RunOptions(impl="impl:f", paths=(str(tmp_path),), sandbox="off"))
    old = (MAX_AGE_DAYS + 10) * 86_400_000
    path = tmp_path / "h.sqlite"
    with History.open(path) as history:
        monkeypatch.setattr(cer.history.database, "_now_ms", lambda: int(time.time() * 1000) - old)
        for index in range(3):
            history.record(replace(run, run_id=f"old{index}"), suite)
        assert len(history.runs(None)) == 3  # the newest of them is kept
        monkeypatch.undo()
        history.record(run, suite)
        kept = [record.run_id for record in history.runs(None)]
    assert kept == [run.run_id]


# --- the evidence names what decided -----------------------------------------------------

PAIRS_SUITE = """\
commonsformat_evals = "0.2"
target = "pairs"

[[cases]]
name = "twice"
category = "pairwise"
input = { x = 3 }
expect = { output = [6, 6] }
"""

# A plugin that passes every case of its category, whatever the implementation does.
PAIRS_MODEL = """\
class Always:
    def execute(self, invoke, case):
        return [6, 6]

MODEL = Always()
"""


def test_a_category_decided_by_a_plugin_names_the_plugin_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    from cer.engine.options import RunOptions
    from cer.engine.runner import run_suite
    from cer.history.database import History
    from cer.reports import ReportContext
    from cer.reports.manifest import manifest_document
    from cer.results.serialize import run_to_dict
    from cer.suite.loader import load_suite

    site = tmp_path / "site"
    dist = site / "cer_pairs-1.2.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cer-pairs\nVersion: 1.2.0\n")
    (dist / "entry_points.txt").write_text("[cer.categories]\npairwise = pairs_model:MODEL\n")
    (site / "pairs_model.py").write_text(PAIRS_MODEL)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    (tmp_path / "evals.toml").write_text(PAIRS_SUITE)
    (tmp_path / "impl.py").write_text("def f(x):\n    return None\n")
    suite = load_suite(tmp_path / "evals.toml")
    run = run_suite(
        suite,
        RunOptions(impl="impl:f", paths=(str(tmp_path), str(site)), sandbox="off"),
    )
    assert run.results[0].status.value == "pass"  # the plugin's doing, not the code's
    provider = "cer-pairs 1.2.0 (entry point pairs_model:MODEL)"
    assert run.conditions is not None
    assert dict(run.conditions.category_plugins) == {"pairwise": provider}
    document = run_to_dict(run)
    assert document["run"]["conditions"]["category_plugins"] == {"pairwise": provider}
    manifest = manifest_document(ReportContext(run, suite))
    assert manifest["run"]["conditions"]["category_plugins"] == {"pairwise": provider}
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(run, suite)
        (record,) = history.runs(None)
    assert any(provider in note and "pairwise" in note for note in record.notes)


HARNESS = """\
import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "start":
        info = {"name": "sneaky-harness", "version": "6.6.6", "files": []}
        sys.stdout.write(json.dumps({"op": "started", "protocol": 1, "implementation": info}))
    elif request["op"] == "run":
        output = {"output": {"type": "integer", "value": "2"}}
        body = {"observation": {"type": "table", "value": output}}
        sys.stdout.write(json.dumps({"op": "result", "seq": request["seq"], **body}))
    else:
        break
    sys.stdout.write("\\n")
    sys.stdout.flush()
"""


def test_a_harness_is_named_in_the_evidence_as_it_declared_itself(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text(SUITE)
    (tmp_path / "harness.py").write_text(HARNESS)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cer.cli",
            "run",
            "evals.toml",
            "--impl-cmd",
            f"{sys.executable} harness.py",
            "--format",
            "json",
            "--no-history",
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    document = json.loads(done.stdout)
    assert any("sneaky-harness" in note and "6.6.6" in note for note in document["run"]["notes"]), (
        document["run"]["notes"]
    )


def test_a_bare_suite_file_name_still_names_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cer.engine.options import RunOptions
    from cer.engine.runner import run_suite
    from cer.suite.loader import load_suite

    folder = tmp_path / "doubler-module"
    folder.mkdir()
    (folder / "evals.toml").write_text(SUITE.replace('target = "doubler"\n', ""))
    (folder / "impl.py").write_text(GOOD)
    monkeypatch.chdir(folder)
    run = run_suite(load_suite(Path("evals.toml")), RunOptions(impl="impl:f", sandbox="off"))
    assert run.target_module == "doubler-module"


def test_an_approval_comment_without_a_record_approves_nothing(tmp_path: Path) -> None:
    from cer.review.provenance import case_text_hash, marker_line
    from cer.suite.loader import load_suite

    (tmp_path / "evals.toml").write_text(SUITE)
    case = load_suite(tmp_path / "evals.toml").cases[1]
    # Anyone can compute the hash of a case and write the comment above it.
    forged = marker_line(
        "Ada Lovelace", "2026-01-01T00:00:00Z", case_text_hash(case), observed=False
    )
    text = SUITE.replace(
        '[[cases]]\nname = "doubles-two"', f'{forged}\n[[cases]]\nname = "doubles-two"'
    )
    (tmp_path / "evals.toml").write_text(text)
    manifest = tmp_path / "manifest.json"
    done = cer_run(tmp_path, GOOD, "--report", f"manifest={manifest}")
    assert done.returncode == 0, done.stderr
    assertions = {a["id"]: a for a in json.loads(manifest.read_text())["assertions"]}
    claimed = assertions["doubles-two"]
    assert claimed["approved_by"] is None
    assert claimed["approval_comment"] == {"by": "Ada Lovelace", "at": "2026-01-01T00:00:00Z"}
    assert claimed["approval_disagrees"] is True
    assert assertions["doubles-one"]["approval_disagrees"] is False


# --- the implementation's identity is the runner's own finding -----------------------------

DISGUISED = """\
import sys

# Name a copy of the older, good version as this module's file: the worker reports
# what __file__ says.
sys.modules[__name__].__file__ = {copy!r}


def f(x):
    return 0
"""


def _identity_run(folder: Path, *, timeout: float = 10.0) -> tuple[str, tuple[str, ...]]:
    from cer.engine.options import RunOptions
    from cer.engine.runner import run_suite
    from cer.events import ImplementationLoaded
    from cer.suite.loader import load_suite

    seen: list[tuple[str, ...]] = []

    def on_event(event: object) -> None:
        if isinstance(event, ImplementationLoaded):
            seen.append(event.source_files)

    run = run_suite(
        load_suite(folder / "evals.toml"),
        RunOptions(impl="impl:f", paths=(str(folder),), sandbox="off", timeout=timeout),
        on_event=on_event,
    )
    return run.implementation_id, seen[0] if seen else ()


def test_a_worker_naming_a_copy_of_older_code_does_not_carry_its_id(tmp_path: Path) -> None:
    module = tmp_path / "module"
    module.mkdir()
    (module / "evals.toml").write_text(SUITE)
    (module / "impl.py").write_text(GOOD)
    old_id, _ = _identity_run(module)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    copy = elsewhere / "impl.py"
    copy.write_text(GOOD)  # the old, passing source, outside every import root
    (module / "impl.py").write_text(DISGUISED.format(copy=str(copy)))
    new_id, files = _identity_run(module)
    assert new_id != old_id
    assert str(copy) not in files
    assert str((module / "impl.py").resolve()) in files


SPELLINGS = """\
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
big = os.path.join(HERE, "big.bin")
with open(big, "wb") as handle:
    handle.truncate(30 * 1024 * 1024)  # sparse: no room on disk, 30 MiB to read
for index in range(2_000):
    spelling = HERE + "/." * (index % 50) + f"/link{{index}}"
    name = f"spelling_{{index}}"
    if not os.path.exists(os.path.join(HERE, f"link{{index}}")):
        os.link(big, os.path.join(HERE, f"link{{index}}"))
    module = types.ModuleType(name)
    module.__file__ = os.path.join(HERE, f"link{{index}}")
    sys.modules[name] = module


def f(x):
    return x * 2
"""


def test_many_names_of_one_huge_file_cost_the_supervisor_one_read(tmp_path: Path) -> None:
    import time

    (tmp_path / "evals.toml").write_text(SUITE)
    (tmp_path / "impl.py").write_text(SPELLINGS.format())
    started = time.monotonic()
    implementation_id, files = _identity_run(tmp_path, timeout=60.0)
    took = time.monotonic() - started
    # 2,000 names of one 30 MiB file: read once (by inode), not 2,000 times (60 GB, far
    # past what an identity may read: it would be unverified).
    assert took < 30, took
    assert "@" in implementation_id
    assert "@unverified-" not in implementation_id, implementation_id
    assert len([f for f in files if "/link" in f]) == 1


MANY_HUGE = """\
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
for index in range(20):
    path = os.path.join(HERE, f"huge{index}.bin")
    with open(path, "wb") as handle:
        handle.truncate(30 * 1024 * 1024)
    module = types.ModuleType(f"huge_{index}")
    module.__file__ = path
    sys.modules[f"huge_{index}"] = module


def f(x):
    return x * 2
"""


def test_an_identity_past_the_budget_is_not_verified_and_says_so(tmp_path: Path) -> None:
    from cer.engine.options import RunOptions
    from cer.engine.runner import run_suite
    from cer.suite.loader import load_suite

    (tmp_path / "evals.toml").write_text(SUITE)
    (tmp_path / "impl.py").write_text(MANY_HUGE)
    run = run_suite(
        load_suite(tmp_path / "evals.toml"),
        RunOptions(impl="impl:f", paths=(str(tmp_path),), sandbox="off"),
    )
    assert "@unverified-" in run.implementation_id
    assert any("identity could not be verified" in note for note in run.notes), run.notes
    assert [r.status.value for r in run.results] == ["pass"] * 3


# --- a retry never gives finished work a fresh clock ---------------------------------------

# After its import, the implementation patches its worker: each case is computed (slowly)
# on its first hand-over and then reported as never started; the answer, ready by then,
# would come back at once on a second hand-over with a fresh clock.
CLAIMS_UNSTARTED = """\
import os
import sys
import time

worker = sys.modules["cer.worker.main"]
_send = worker.Worker.send
FLAG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lied")


def send(self, message, raw=None):
    if message.get("op") == "result" and not os.path.exists(FLAG):
        open(FLAG, "w").close()  # once per run, whichever worker it is
        time.sleep(0.6)  # the slow work, done on the first clock
        message = {"op": "result", "seq": message["seq"], "exit": {"how": "unstarted"}}
        raw = b""
    _send(self, message, raw)


worker.Worker.send = send


def f(x):
    return x * 2
"""

RETRY_SUITE = """\
commonsformat_evals = "0.2"
target = "doubler"

[[cases]]
name = "fast"
category = "functional"
input = { x = 1 }
expect = { output = 2, elapsed_ms_max = 400 }
"""


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_case_claimed_unstarted_keeps_its_first_clock(tmp_path: Path, isolation: str) -> None:
    from cer.engine.options import RunOptions
    from cer.engine.runner import run_suite
    from cer.suite.loader import load_suite

    (tmp_path / "evals.toml").write_text(RETRY_SUITE)
    (tmp_path / "impl.py").write_text(CLAIMS_UNSTARTED)
    run = run_suite(
        load_suite(tmp_path / "evals.toml"),
        RunOptions(
            impl="impl:f", paths=(str(tmp_path),), sandbox="off", isolation=isolation, jobs=1
        ),
    )
    (result,) = run.results
    # Its time runs from the first hand-over: the slow first attempt counts.
    assert result.status.value == "fail", result
    assert result.elapsed_ms is not None and result.elapsed_ms >= 600
    assert result.reason is not None
    assert "handed over again, to a fresh process" in result.reason
    assert "its worker said it never started it" in result.reason


# A harness that works through the second case slowly, then answers the first case
# again in its place: cer restarts it and sends the second case to the new process,
# which (told by a file) answers it at once.
DOUBLE_ANSWER = """\
import json
import os
import sys
import time

FLAG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worked")
last = None
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "start":
        info = {"name": "h", "version": "1", "files": []}
        out = {"op": "started", "protocol": 1, "implementation": info}
    elif request["op"] == "run":
        x = int(request["case"]["input"]["value"]["x"]["value"])
        if x == 2 and not os.path.exists(FLAG):
            time.sleep(0.6)  # the slow work, on the first clock
            open(FLAG, "w").close()
            value = {"output": {"type": "integer", "value": "2"}}
            out = {"op": "result", "seq": last,
                   "observation": {"type": "table", "value": value}}
        else:
            value = {"output": {"type": "integer", "value": str(x * 2)}}
            out = {"op": "result", "seq": request["seq"],
                   "observation": {"type": "table", "value": value}}
        last = request["seq"]
    else:
        break
    sys.stdout.write(json.dumps(out) + "\\n")
    sys.stdout.flush()
"""

HARNESS_RETRY_SUITE = """\
commonsformat_evals = "0.2"
target = "doubler"

[[cases]]
name = "one"
category = "functional"
input = { x = 1 }
expect = { output = 2 }

[[cases]]
name = "two"
category = "functional"
input = { x = 2 }
expect = { output = 4, elapsed_ms_max = 400 }
"""


def test_a_case_sent_again_to_a_restarted_harness_keeps_its_first_clock(tmp_path: Path) -> None:
    from cer.engine.options import RunOptions
    from cer.engine.runner import run_suite
    from cer.suite.loader import load_suite

    (tmp_path / "evals.toml").write_text(HARNESS_RETRY_SUITE)
    (tmp_path / "harness.py").write_text(DOUBLE_ANSWER)
    run = run_suite(
        load_suite(tmp_path / "evals.toml"),
        RunOptions(
            impl=f"{sys.executable} {tmp_path / 'harness.py'}", kind="command", sandbox="off"
        ),
    )
    one, two = run.results
    assert one.status.value == "errored" and "answered this case twice" in (one.reason or "")
    assert two.status.value == "fail", two
    assert two.elapsed_ms is not None and two.elapsed_ms >= 600
    assert "handed over again, to a fresh process" in (two.reason or "")
