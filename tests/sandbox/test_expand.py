""":func:`cer.sandbox.expand` walks the lent folders against the refused paths by set
lookups, and resolves only the entries that are symbolic links: the policy it makes is
exactly the one the plain walk (every refused path compared with every entry, every
entry resolved) makes, kept here as the reference."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cer import sandbox
from cer.sandbox import VCS_NAMES, in_checkout


def _within(path: str, root: str) -> bool:
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
        _allow(root, refused, refused_ids, write, listable)
    read: list[str] = []
    for root in read_roots:
        _allow(root, refused, refused_ids, read, listable)
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


def _link_lendable(real: str, refused: set[str]) -> bool:
    if not os.path.isdir(real):
        return not any(part in VCS_NAMES for part in real.split(os.sep))
    if real == "/" or os.path.dirname(real) == "/" or in_checkout(real):
        return False
    return not any(_within(bad, real) for bad in refused)


def _allow(
    path: str,
    refused: set[str],
    refused_ids: set[tuple[int, int]],
    out: list[str],
    listable: list[str],
    inside: str = "",
) -> None:
    real = os.path.realpath(path)
    if inside and not _within(real, inside) and not _link_lendable(real, refused):
        return
    if any(_within(real, bad) for bad in refused):
        return
    try:
        info = os.stat(real)
    except OSError:
        return
    if (info.st_dev, info.st_ino) in refused_ids:
        return
    holes = any(_within(bad, real) for bad in refused)
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
        _allow(os.path.join(real, name), refused, refused_ids, out, listable, inside or real)


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
