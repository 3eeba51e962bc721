"""The sandbox's policy, its decision and its launcher (docs/trust.md#the-sandbox).

The attacks themselves are in tests/hostile/test_sandbox_battery.py."""

from __future__ import annotations

import dataclasses
import importlib.machinery
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cer import sandbox
from cer.cli.main import main as cer_main
from cer.engine import confinement
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import Status
from cer.sandbox import VCS_NAMES, in_checkout, landlock, world
from cer.suite.loader import load_suite

LANDLOCK = pytest.mark.skipif(not sandbox.status().available, reason="no Landlock here")

SUITE = """commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "reads-the-suite"
category = "functional"
input = {}
expect = { output = "SECRET-1" }
"""

CHEAT = """
import os
def f():
    text = open(os.path.join(os.path.dirname(__file__), "evals.toml")).read()
    return "SECRET-1" if "SECRET-1" in text else "no"
"""


def _folder(root: Path) -> None:
    (root / "evals.toml").write_text(SUITE, encoding="utf-8")
    (root / "cheat.py").write_text(CHEAT, encoding="utf-8")
    (root / "lib").mkdir()
    (root / "lib" / "helper.py").write_text("X = 1\n", encoding="utf-8")


# --------------------------------------------------------------------------- expand


def test_a_folder_holding_a_denied_file_is_allowed_entry_by_entry(tmp_path: Path) -> None:
    _folder(tmp_path)
    root = str(tmp_path.resolve())
    policy = sandbox.expand([root], [], [os.path.join(root, "evals.toml")])
    assert policy.read == (os.path.join(root, "cheat.py"), os.path.join(root, "lib"))
    assert policy.listable == (root,)


def test_a_folder_without_denied_paths_is_allowed_whole(tmp_path: Path) -> None:
    _folder(tmp_path)
    policy = sandbox.expand([str(tmp_path / "lib")], [], [str(tmp_path / "evals.toml")])
    assert policy.read == (str((tmp_path / "lib").resolve()),)
    assert policy.listable == ()


def test_links_to_a_denied_file_are_left_out(tmp_path: Path) -> None:
    _folder(tmp_path)
    (tmp_path / "lib" / "soft.toml").symlink_to(tmp_path / "evals.toml")
    os.link(tmp_path / "evals.toml", tmp_path / "hard.toml")
    policy = sandbox.expand([str(tmp_path)], [], [str(tmp_path / "lib" / "soft.toml")])
    # The symbolic link resolves to the suite, which is then denied itself.
    assert str((tmp_path / "evals.toml").resolve()) not in policy.read
    assert str((tmp_path / "hard.toml").resolve()) not in policy.read
    assert str((tmp_path / "cheat.py").resolve()) in policy.read


def test_a_denied_folder_is_left_out_whole_and_missing_roots_are_dropped(tmp_path: Path) -> None:
    _folder(tmp_path)
    policy = sandbox.expand([str(tmp_path), str(tmp_path / "absent")], [], [str(tmp_path / "lib")])
    assert not any(path.endswith("/lib") or "/lib/" in path for path in policy.read)
    assert str((tmp_path / "evals.toml").resolve()) in policy.read


def test_a_policy_survives_its_text_form() -> None:
    policy = sandbox.Policy(("/a", "/b"), ("/s",), "deny", "/s", ("/c",))
    assert sandbox.Policy.from_json(policy.to_json()) == policy
    with pytest.raises(ValueError, match="network"):
        sandbox.Policy.from_json('{"read": [], "write": [], "network": "maybe"}')


def test_the_launcher_rules_round_trip_and_refuse_garbage() -> None:
    text = landlock.encode(7, ["/r"], ["/w"], ["/l", "/bad\nline"], "deny")
    assert text == "landlock 7 deny\nr /r\nw /w\nl /l"
    own = landlock.encode(7, ["/r"], [], [], "loopback", aliases=[])
    assert landlock.decode(own) == (7, "loopback", True, {"r": ["/r"], "w": [], "l": [], "a": []})
    # A network namespace of its own is made with the world only: never lent silently.
    with pytest.raises(landlock.LandlockError, match="not a Landlock rule text"):
        landlock.decode("landlock 7 loopback\nr /r")
    with pytest.raises(landlock.LandlockError, match="not a network"):
        landlock.encode(7, [], [], [], "maybe")
    with pytest.raises(landlock.LandlockError, match="not a Landlock rule text"):
        landlock.apply_encoded("something else")
    with pytest.raises(landlock.LandlockError, match="not a Landlock rule"):
        landlock.apply_encoded("landlock 7 allow\nx /y")


def test_denying_the_network_needs_abi_4() -> None:
    with pytest.raises(sandbox.SandboxError, match="needs ABI 4"):
        sandbox.apply(sandbox.Policy((), (), "deny"), abi=3)


def test_a_network_of_its_own_is_refused_without_the_world() -> None:
    with pytest.raises(sandbox.SandboxError, match="only with the world"):
        sandbox.apply(sandbox.Policy((), (), "loopback"), abi=7)


# --------------------------------------------------------------------------- decide


def test_the_test_hook_makes_landlock_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")
    found = sandbox.status()
    assert not found.available
    assert found.describe() == f"none: Landlock is unavailable ({sandbox.DISABLE_ENV} is set)"


def test_decisions(monkeypatch: pytest.MonkeyPatch) -> None:
    assert confinement.decide("off", "allow") == confinement.Decision(
        0, "none: disabled", network_description=confinement.NETWORK_LENT
    )
    assert confinement.decide("off", "auto") == confinement.Decision(
        0,
        "none: disabled",
        network_description="the machine's (no network namespace: --sandbox off)",
    )
    with pytest.raises(confinement.SandboxUnavailable, match="--sandbox off turns off"):
        confinement.decide("off", "deny")
    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")
    assert confinement.decide("auto", "allow").description.startswith(
        "none: Landlock is unavailable"
    )
    unconfined = confinement.decide("auto", "auto")
    assert unconfined.network == "allow"
    assert unconfined.network_description.startswith(
        "the machine's (no network namespace: no sandbox: Landlock is unavailable"
    )
    with pytest.raises(confinement.SandboxUnavailable, match="--sandbox require"):
        confinement.decide("require", "allow")
    with pytest.raises(confinement.SandboxUnavailable, match="--network deny needs the sandbox"):
        confinement.decide("auto", "deny")


@LANDLOCK
def test_auto_and_require_use_the_world_and_landlock_here() -> None:
    found = sandbox.status()
    if sandbox.world_refused() is not None:
        pytest.skip(f"no world here: {sandbox.world_refused()}")
    decision = confinement.decide("auto", "allow")
    assert decision.description == f"namespaces + landlock ABI {found.abi}"
    assert decision.world
    assert (decision.network, decision.network_description) == (
        "allow",
        "the machine's (lent by --network allow)",
    )
    own = confinement.decide("auto", "auto")
    assert (own.network, own.network_description) == (
        "loopback",
        "loopback only (a network namespace of its own)",
    )
    denied = confinement.decide("auto", "deny")
    assert (denied.network, denied.network_description) == ("deny", confinement.NETWORK_DENIED)
    assert confinement.decide("require", "deny").abi == found.abi


@LANDLOCK
def test_without_namespaces_auto_is_landlock_only_and_require_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(world.DISABLE_ENV, "1")
    decision = confinement.decide("auto", "allow")
    assert not decision.world and decision.abi == sandbox.status().abi
    assert decision.description == (
        f"landlock only: namespaces turned off ({world.DISABLE_ENV} is set)"
    )
    with pytest.raises(confinement.SandboxUnavailable, match=r"world .* cannot be made here"):
        confinement.decide("require", "allow")
    # By default the machine's network is lent there, and the run says so and why.
    lent = confinement.decide("auto", "auto")
    assert (lent.network, lent.network_description) == (
        "allow",
        f"the machine's (no network namespace: namespaces turned off ({world.DISABLE_ENV} is set))",
    )
    # --network deny is isolation required: Landlock alone would refuse TCP only.
    with pytest.raises(confinement.SandboxUnavailable, match="needs a network namespace"):
        confinement.decide("auto", "deny")


def test_require_without_landlock_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _folder(tmp_path)
    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")
    code = cer_main(
        ["run", str(tmp_path / "evals.toml"), "--impl", "cheat:f", "--sandbox", "require"]
    )
    assert code == 2
    assert "--sandbox require: this machine cannot sandbox the implementation" in (
        capsys.readouterr().err
    )


def test_require_is_checked_by_the_runner_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder(tmp_path)
    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")
    with pytest.raises(confinement.SandboxUnavailable):
        run_suite(load_suite(tmp_path / "evals.toml"), RunOptions("cheat:f", sandbox="require"))


def test_auto_without_landlock_runs_unconfined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder(tmp_path)
    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")
    run = run_suite(load_suite(tmp_path / "evals.toml"), RunOptions("cheat:f"))
    assert run.results[0].status is Status.PASS


@LANDLOCK
@pytest.mark.parametrize("mode", ["auto", "require"])
def test_the_sandbox_keeps_the_suite_out_of_reach(tmp_path: Path, mode: str) -> None:
    _folder(tmp_path)
    run = run_suite(load_suite(tmp_path / "evals.toml"), RunOptions("cheat:f", sandbox=mode))
    (result,) = run.results
    assert result.status is Status.ERRORED
    suite = tmp_path.resolve() / "evals.toml"
    # In the implementation's world the suite is absent; under Landlock alone, refused.
    refusal = (
        f"FileNotFoundError: [Errno 2] No such file or directory: '{suite}'"
        if sandbox.world_refused() is None
        else f"PermissionError: [Errno 13] Permission denied: '{suite}'"
    )
    assert result.reason == (
        f"the implementation raised {refusal}; the sandbox denied access to {suite} (not "
        "in the implementation's allowed paths)"
    )


def test_off_runs_unconfined(tmp_path: Path) -> None:
    _folder(tmp_path)
    run = run_suite(load_suite(tmp_path / "evals.toml"), RunOptions("cheat:f", sandbox="off"))
    assert run.results[0].status is Status.PASS


# --------------------------------------------------------------------------- reasons


def test_a_denied_path_is_explained_in_python_and_node_wording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    impl, elsewhere = tmp_path / "impl", tmp_path / "x"
    impl.mkdir()
    elsewhere.mkdir()
    (impl / "out.txt").write_text("", encoding="utf-8")
    (elsewhere / "y").write_text("", encoding="utf-8")
    policy = sandbox.Policy((str(impl),), ("/tmp/scratch",), scratch="/tmp/scratch")
    python = (
        f"the implementation raised PermissionError: [Errno 13] Permission denied: '{elsewhere}/y'"
    )
    assert confinement.explain_denial(python, policy) == (
        f"{python}; the sandbox denied access to {elsewhere}/y (not in the implementation's "
        f"allowed paths; allow it with --sandbox-read {elsewhere}/y)"
    )
    node = f"raised Error: EACCES: permission denied, open '{impl}/out.txt'"
    assert confinement.explain_denial(node, policy).endswith(
        f"the sandbox denied access to {impl}/out.txt (the implementation may only read "
        "there; it may write only to its scratch folder (/tmp/scratch))"
    )
    # A path that is not there was being made: no --sandbox-read would allow that.
    making = f"[Errno 13] Permission denied: '{elsewhere}/build'"
    assert confinement.explain_denial(making, policy) == (
        f"{making}; the sandbox denied making {elsewhere}/build (the implementation may "
        "make files only in its scratch folder, the one TMPDIR names)"
    )
    beside = f"[Errno 13] Permission denied: '{impl}/new.txt'"
    assert confinement.explain_denial(beside, policy).endswith(
        "(the implementation may only read there; it may write only to its scratch "
        "folder (/tmp/scratch))"
    )
    inside = "[Errno 13] Permission denied: '/tmp/scratch/a'"
    assert confinement.explain_denial(inside, policy) == inside
    # A relative path is the working directory's, where the implementation runs.
    relative = "[Errno 13] Permission denied: 'y'"
    monkeypatch.chdir(elsewhere)
    assert confinement.explain_denial(relative, policy) == (
        f"{relative}; the sandbox denied access to {elsewhere}/y (not in the implementation's "
        f"allowed paths; allow it with --sandbox-read {elsewhere}/y)"
    )
    program = "[Errno 13] Permission denied: 'sh'"  # run by name: not a file here
    assert confinement.explain_denial(program, policy) == program
    # Under --network deny, a refused connection names the option.
    closed = sandbox.Policy((str(impl),), ("/tmp/scratch",), "deny", "/tmp/scratch")
    for refused in (
        "the implementation raised PermissionError: [Errno 13] Permission denied",
        "raised Error: connect EACCES 127.0.0.1:8080",
    ):
        assert confinement.explain_denial(refused, closed).endswith(
            "the sandbox refused a TCP connection or listening socket (--network deny; "
            "--network allow lets the implementation use TCP)"
        )
        assert confinement.explain_denial(refused, policy) == refused
    # In a network of its own, a server not reached names what it has and the option.
    own = dataclasses.replace(policy, network="loopback")
    for unreached in (
        "the implementation raised OSError: [Errno 101] Network is unreachable",
        "the implementation raised ConnectionRefusedError: [Errno 111] Connection refused",
        "raised Error: getaddrinfo EAI_AGAIN example.org",
    ):
        assert confinement.explain_denial(unreached, own).endswith(
            "the implementation has a network of its own, loopback only, in which no server "
            "of this machine or beyond is (--network allow lends it the machine's network)"
        )
        assert confinement.explain_denial(unreached, policy) == unreached


# --------------------------------------------------------------------------- launcher


def _launch(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-S", landlock.__file__, *argv],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_launcher_never_runs_a_command_it_cannot_confine() -> None:
    done = _launch("not rules", "--", "echo", "ran")
    assert done.returncode == 126
    assert "cannot confine the command" in done.stderr
    assert "ran" not in done.stdout


@LANDLOCK
def test_the_launcher_confines_then_executes(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("s", encoding="utf-8")
    version = sandbox.status().abi
    rules = landlock.encode(version, ["/usr", "/lib", "/lib64", "/bin", "/etc"], [], [], "allow")
    done = _launch(rules, "--", "cat", str(tmp_path / "secret"))
    assert done.returncode != 0
    assert "Permission denied" in done.stderr
    missing = _launch(rules, "--", "no-such-program-here")
    assert missing.returncode == 127
    assert "cannot run 'no-such-program-here'" in missing.stderr


# --------------------------------------------------------------------------- options


def _resolve(argv: list[str], values: dict[str, object]) -> RunOptions:
    import argparse

    from cer.config import ProjectConfig, add_run_arguments, resolve_run

    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    config = ProjectConfig(values, Path("/proj/pyproject.toml"))
    return resolve_run(parser.parse_args(["evals.toml", "--impl", "m:f", *argv]), config).options


def test_sandbox_and_network_come_from_the_command_line_or_the_file() -> None:
    from cer.config import UsageError

    assert (_resolve([], {}).sandbox, _resolve([], {}).network) == ("auto", "auto")
    assert _resolve([], {"network": "allow"}).network == "allow"
    assert _resolve(["--network", "auto"], {"network": "allow"}).network == "auto"
    with pytest.raises(UsageError, match="network must be one of auto, allow, deny"):
        _resolve([], {"network": "maybe"})
    assert _resolve([], {"sandbox": "off"}).sandbox == "off"
    assert _resolve(["--sandbox", "auto"], {"sandbox": "off"}).sandbox == "auto"
    with pytest.raises(UsageError, match="sandbox must be one of auto, require, off"):
        _resolve([], {"sandbox": "maybe"})
    with pytest.raises(UsageError, match="--network deny needs the sandbox"):
        _resolve(["--network", "deny"], {"sandbox": "off"})


# --------------------------------------------------------------------------- the world


def test_a_policy_keeps_its_world_and_aliases_across_the_pipe(tmp_path: Path) -> None:
    target = tmp_path / "real"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    policy = sandbox.expand([str(tmp_path / "link")], [], [])
    assert policy.read == (str(target),)
    assert policy.aliases == (str(tmp_path / "link"),)
    sent = dataclasses.replace(policy, world=True)
    assert sandbox.Policy.from_json(sent.to_json()) == sent


WORLD = pytest.mark.skipif(
    sandbox.world_refused() is not None, reason=f"no world here: {sandbox.world_refused()}"
)


@WORLD
def test_a_world_holds_only_what_it_is_lent(tmp_path: Path) -> None:
    """Built in a child: the lent file is there under its own name, through its link;
    the file beside it, the folder around it, a socket and the other processes are not."""
    lent = tmp_path / "project" / "module.py"
    lent.parent.mkdir()
    lent.write_text("VALUE = 1\n", encoding="utf-8")
    (tmp_path / "project" / "secret.txt").write_text("expected values", encoding="utf-8")
    (tmp_path / "alias").symlink_to(tmp_path / "project")
    here = os.path.dirname(os.__file__)
    read = sorted({os.path.realpath(p) for p in ("/usr", "/lib", "/lib64", "/etc", here)})
    listable = [str(tmp_path / "project")]
    (tmp_path / "notes.txt").write_text("not lent", encoding="utf-8")
    read_w, write_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reports what it sees, then ends
        os.close(read_w)
        try:
            world.enter(
                [*read, str(lent)],
                [],
                listable,
                [str(tmp_path / "alias"), "/lib64", "/bin"],
                network=True,
                pids=True,
            )
            seen = {
                "module": (tmp_path / "alias" / "module.py").read_text(encoding="utf-8"),
                "listing": sorted(os.listdir(tmp_path / "project")),
                "secret": os.path.exists(tmp_path / "project" / "secret.txt"),
                "around": sorted(os.listdir(tmp_path)),
                "pids": sorted(int(n) for n in os.listdir("/proc") if n.isdigit()),
                "root": sorted(os.listdir("/")),
            }
            os.write(write_w, json.dumps(seen).encode())
        finally:
            os._exit(0)
    os.close(write_w)
    with os.fdopen(read_w, "rb") as handle:
        seen = json.loads(handle.read() or b"{}")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert seen["module"] == "VALUE = 1\n"
    assert seen["listing"] == ["module.py"] and not seen["secret"]
    assert seen["pids"] == [1, 2]  # process 1 of the world, and the child itself
    assert seen["around"] == ["alias", "project"]  # the folder around: only the way in
    assert "home" not in seen["root"] and "run" not in seen["root"]
    assert {"proc", "dev", "tmp", "usr"} <= set(seen["root"])


# ------------------------------------------------------ expand against the plain walk
# expand walks the lent folders against the refused paths by set lookups and resolves
# only the entries that are symbolic links; the policy it makes is exactly the one the
# plain walk (every refused path compared with every entry, every entry resolved)
# makes, kept here as the reference.


def _plain_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def reference_expand(
    read_roots: list[str], write_roots: list[str], denied: list[str]
) -> sandbox.Policy:
    """The walk as it was: each entry resolved, each compared with every refused path."""
    refused: set[str] = set()
    refused_ids: set[tuple[int, int]] = set()
    for path in denied:
        real = os.path.realpath(path)
        refused.add(real)
        try:
            info = os.stat(real)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            refused_ids.add((info.st_dev, info.st_ino))
    write: list[str] = []
    listable: list[str] = []
    aliases = [
        os.path.abspath(root)
        for root in (*read_roots, *write_roots)
        if root and os.path.abspath(root) != os.path.realpath(root)
    ]
    for root in write_roots:
        _plain_allow(root, refused, refused_ids, write, listable)
    read: list[str] = []
    for root in read_roots:
        _plain_allow(root, refused, refused_ids, read, listable)
    for folder in listable:
        try:
            with os.scandir(folder) as entries:
                aliases.extend(entry.path for entry in entries if entry.is_symlink())
        except OSError:
            continue
    return sandbox.Policy(
        tuple(dict.fromkeys(read)),
        tuple(dict.fromkeys(write)),
        "allow",
        "",
        tuple(dict.fromkeys(listable)),
        tuple(dict.fromkeys(aliases)),
    )


def _plain_link_lendable(real: str, refused: set[str]) -> bool:
    if any(part in VCS_NAMES for part in real.split(os.sep)):
        return False
    modules = tuple(importlib.machinery.all_suffixes())
    if not os.path.isdir(real):
        return real.endswith(modules)
    if real == "/" or os.path.dirname(real) == "/" or in_checkout(real):
        return False
    if any(_plain_within(bad, real) for bad in refused):
        return False
    names = os.listdir(real)
    paths = [os.path.join(real, name) for name in names]
    if any(stat.S_ISSOCK(os.lstat(path).st_mode) for path in paths):
        return False
    return any(os.path.isfile(path) and path.endswith(modules) for path in paths)


def _plain_allow(
    path: str,
    refused: set[str],
    refused_ids: set[tuple[int, int]],
    out: list[str],
    listable: list[str],
    inside: str = "",
) -> None:
    real = os.path.realpath(path)
    if inside and not _plain_within(real, inside) and not _plain_link_lendable(real, refused):
        return
    if any(_plain_within(real, bad) for bad in refused):
        return
    try:
        info = os.stat(real)
    except OSError:
        return
    if (info.st_dev, info.st_ino) in refused_ids:
        return
    holes = any(_plain_within(bad, real) for bad in refused)
    if not holes or not stat.S_ISDIR(info.st_mode):
        out.append(real)
        return
    if real in listable:
        return
    listable.append(real)
    try:
        entries = sorted(os.listdir(real))
    except OSError:
        return
    for name in entries:
        _plain_allow(os.path.join(real, name), refused, refused_ids, out, listable, inside or real)


def make_tree(root: Path) -> dict[str, list[str]]:
    """A project with links in and out of it, refused paths nested in one another and
    refused paths under lent folders; the roots and refusals to expand it with."""
    project = root / "project"
    (project / "pkg" / "sub" / "deep").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "sub" / "mod.py").write_text("x = 1\n")
    (project / "pkg" / "sub" / "deep" / "secret.toml").write_text("s")
    (project / "pkg" / "sub" / "deep" / "open.txt").write_text("o")
    (project / "evals.toml").write_text("e")
    (project / ".cer").mkdir()
    (project / ".cer" / "history.sqlite").write_text("h")
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref")
    os.link(project / "evals.toml", project / "hard-evals.toml")
    outside = root / "outside"
    (outside / "lib" / "inner").mkdir(parents=True)
    (outside / "lib" / "a.py").write_text("a")
    (outside / "lib" / "inner" / "kept.json").write_text("k")
    (outside / "file.txt").write_text("f")
    checkout = root / "checkout"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "tool.py").write_text("t")
    os.symlink(outside / "lib", project / "linked-lib")
    os.symlink(outside / "file.txt", project / "linked-file")
    os.symlink(project / "evals.toml", project / "pkg" / "evals-link.toml")
    os.symlink(project / "pkg" / "sub", project / "sub-again")
    os.symlink(checkout, project / "linked-checkout")
    os.symlink(root / "missing", project / "dangling")
    os.symlink("/", project / "to-root")
    os.symlink(project / ".git", project / "git-link")
    os.symlink(project, root / "project-link")
    tmp = root / "tmp"
    for i in range(30):
        (tmp / f"run-{i}" / "reports").mkdir(parents=True)
        (tmp / f"run-{i}" / "reports" / "report.json").write_text("r")
        (tmp / f"run-{i}" / "reports" / "other.xml").write_text("x")
    (tmp / "loose.txt").write_text("l")
    return {
        "read": [
            str(root / "project-link"),
            str(tmp),
            str(outside),
            str(root / "absent"),
            str(project / "pkg"),
        ],
        "write": [str(tmp / "run-4")],
        "denied": [
            str(project / "evals.toml"),
            str(project / ".cer"),
            str(project / ".cer" / "history.sqlite"),
            str(project / ".git"),
            str(project / "pkg" / "sub" / "deep" / "secret.toml"),
            str(outside / "lib" / "inner"),
            str(root / "project-link" / "pkg" / "sub" / "deep"),
            str(root / "never-made"),
            *(str(tmp / f"run-{i}" / "reports" / "report.json") for i in range(0, 30, 2)),
            str(tmp / "run-5"),
        ],
    }


def test_expand_makes_the_policy_the_plain_walk_makes(tmp_path: Path) -> None:
    given = make_tree(tmp_path)
    expected = reference_expand(given["read"], given["write"], given["denied"])
    got = sandbox.expand(given["read"], given["write"], given["denied"])
    assert got == expected
    # The tree is walked entry by entry where it holds refused paths, links and all.
    real = os.path.realpath(tmp_path)
    assert f"{real}/project" in got.listable
    assert f"{real}/project/pkg/sub/mod.py" in got.read
    assert not any(path.startswith(f"{real}/project/pkg/sub/deep") for path in got.read)
    assert f"{real}/outside/lib/a.py" in got.read
    assert f"{real}/tmp/run-1" in got.read
    assert f"{real}/tmp/run-2/reports/other.xml" in got.read
    assert f"{real}/tmp/run-2/reports/report.json" not in got.read
    assert f"{real}/tmp/run-4/reports/other.xml" in got.write


@pytest.mark.parametrize(
    "denied",
    [
        [],
        ["/"],
        ["{root}"],
        ["{root}/project/pkg", "{root}/project/pkg/sub", "{root}/project/pkg/sub/mod.py"],
        ["{root}/project-link/linked-lib/a.py"],
    ],
)
def test_expand_agrees_with_the_plain_walk_on_other_refusals(
    tmp_path: Path, denied: list[str]
) -> None:
    given = make_tree(tmp_path)
    refused = [path.format(root=tmp_path) for path in denied]
    assert sandbox.expand(given["read"], given["write"], refused) == reference_expand(
        given["read"], given["write"], refused
    )
