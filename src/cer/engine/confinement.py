"""What the sandbox allows one run's implementation, decided by the supervisor.

The supervisor decides, from the suite and the run options, whether a run is sandboxed
(``--sandbox auto|require|off``) and with what policy (:func:`build`); the
worker and the command launcher only apply it (see :mod:`cer.sandbox`). The policy:

- read and execute: what the implementation needs of its import roots (``--path``
  folders, the suite's folder, the working directory; see :mod:`cer.sandbox.readset`), the
  folders a command names and what its program's shims need (:mod:`cer.sandbox.shims`), the
  paths of ``RunOptions.sandbox_read``, the Python installation
  and everything on this interpreter's ``sys.path`` (with the packages its editable
  installs map from elsewhere: :mod:`cer.engine.editable`), ``cer`` itself and its data files
  (``schema.sql``), the folders on ``PATH`` and the installations their links lead into
  (:func:`cer.sandbox.shims.linked_installations`), the suite's fixtures, the system's
  programs, libraries and configuration (``/usr``, ``/lib*``, ``/bin``, ``/sbin``,
  ``/etc``, ``/opt``), ``/proc``, ``/sys``, ``/dev/urandom``, ``/dev/random`` and
  ``/dev/zero``;
- write: the run's scratch folder (``TMPDIR``, ``TEMP`` and ``TMP`` point at it),
  ``/dev/null`` and ``/dev/shm``;
- nothing at all: the suite file, ``commonsformat.md`` and ``commonsformat.toml``
  beside it, ``.cer`` folders (the history) beside the suite and in the working
  directory, and every path in ``RunOptions.protected`` (report outputs, a history
  given by path), and what :mod:`cer.sandbox.readset` leaves out of the import roots. A folder
  that holds one of them is allowed entry by entry.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from cer import sandbox
from cer.engine import editable
from cer.engine.kinds import kind_named
from cer.engine.options import NETWORK_MODES, SANDBOX_MODES, RunOptions
from cer.model import Suite
from cer.resources import ResourceMissing, schema_sql_path
from cer.sandbox import readset, shims

_SYSTEM_READ = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
)
_SYSTEM_WRITE = ("/dev/null", "/dev/shm")
_MODULE_FILES = ("commonsformat.md", "commonsformat.toml")


class SandboxUnavailable(ValueError):
    """``--sandbox require`` (or ``--network deny``) on a machine that cannot honour it."""


NETWORK_OWN = "loopback only (a network namespace of its own)"
"""The network a run records under ``--network auto`` where the world is built."""
NETWORK_DENIED = "denied: loopback only, and no TCP (--network deny)"
"""The network a run records under ``--network deny``."""
NETWORK_LENT = "the machine's (lent by --network allow)"
"""The network a run records under ``--network allow``."""


def machines_network(why: str) -> str:
    """The network a run records under ``--network auto`` where no world is built:
    the machine's, and why it has no namespace of its own."""
    return f"the machine's (no network namespace: {why})"


@dataclass(frozen=True)
class Decision:
    """Whether a run is sandboxed: the Landlock ABI to use (0: not sandboxed), whether
    the implementation's side lives in a world of its own (:mod:`cer.sandbox.world`),
    how run records name it (``namespaces + landlock ABI 7``, ``landlock only:
    <why no world>``, ``none: disabled``, ``none: <why>``), the network its side gets
    (:data:`cer.sandbox.Network`) and how run records name that (:data:`NETWORK_OWN`,
    :data:`NETWORK_DENIED`, :data:`NETWORK_LENT`, :func:`machines_network`)."""

    abi: int
    description: str
    world: bool = False
    network: sandbox.Network = "allow"
    network_description: str = machines_network("no sandbox")


def decide(mode: str, network: str) -> Decision:
    """The sandbox a run with ``--sandbox mode`` and ``--network network`` gets here;
    SandboxUnavailable when the run must not start (``require`` without Landlock or
    the world, or ``--network deny`` without a network namespace of its own).

    The network: ``auto`` gives the implementation's side a network namespace holding
    only a loopback interface wherever its world is built, and lends the machine's
    network elsewhere (Landlock alone, no sandbox), which the record says with the
    reason; ``allow`` lends the machine's network everywhere; ``deny`` needs the world
    (Landlock's network rules are TCP's only: UDP would still reach the machine's
    network) and refuses TCP inside it too."""
    if mode not in SANDBOX_MODES:
        raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_MODES)}, not {mode!r}")
    if network not in NETWORK_MODES:
        raise ValueError(f"network must be one of {', '.join(NETWORK_MODES)}, not {network!r}")
    lent = NETWORK_LENT if network == "allow" else ""
    if mode == "off":
        if network == "deny":
            raise SandboxUnavailable(
                "--network deny needs the sandbox, which --sandbox off turns off"
            )
        return Decision(
            0, "none: disabled", network_description=lent or machines_network("--sandbox off")
        )
    found = sandbox.status()
    if not found.available:
        if mode == "require":
            raise SandboxUnavailable(
                "--sandbox require: this machine cannot sandbox the implementation: "
                + found.why_not
            )
        if network == "deny":
            raise SandboxUnavailable(
                f"--network deny needs the sandbox, and this machine has none: {found.why_not}"
            )
        return Decision(
            0,
            found.describe(),
            network_description=lent or machines_network(f"no sandbox: {found.why_not}"),
        )
    if network == "deny" and found.abi < 4:
        raise SandboxUnavailable(
            f"--network deny needs Landlock ABI 4 or later; this kernel has ABI {found.abi}"
        )
    refused = sandbox.world_refused()
    if refused is None:
        described = f"namespaces + {found.describe()}"
        if network == "allow":
            return Decision(found.abi, described, True, "allow", NETWORK_LENT)
        if network == "deny":
            return Decision(found.abi, described, True, "deny", NETWORK_DENIED)
        return Decision(found.abi, described, True, "loopback", NETWORK_OWN)
    if mode == "require":
        raise SandboxUnavailable(
            "--sandbox require: the implementation's world (its own namespaces and a root "
            f"built from what it needs) cannot be made here: {refused}"
        )
    if network == "deny":
        raise SandboxUnavailable(
            "--network deny needs a network namespace of the implementation's own (Landlock "
            f"alone refuses only TCP), and none can be made here: {refused}"
        )
    return Decision(
        found.abi,
        f"landlock only: {refused}",
        network_description=lent or machines_network(refused),
    )


def network_of(mode: str, *, world: bool) -> sandbox.Network:
    """The network of the implementation's side under ``--network mode``: a namespace
    of its own (``loopback``, or ``deny``) only where its world is built."""
    if mode == "deny":
        return "deny"
    return "loopback" if world and mode == "auto" else "allow"


def protected_paths(suite: Suite, options: RunOptions) -> list[str]:
    """Everything the implementation must not reach at all."""
    folder = suite.directory
    paths = [str(suite.path)]
    paths.extend(str(folder / name) for name in _MODULE_FILES)
    paths.append(str(folder / ".cer"))
    paths.append(str(Path.cwd() / ".cer"))
    for path in options.protected:
        paths.append(path)
        # SQLite keeps its journal beside the database.
        paths.extend(f"{path}{suffix}" for suffix in ("-wal", "-shm", "-journal"))
    return paths


def _command_words(options: RunOptions) -> list[str]:
    """The words of a command implementation, as the shell splits them; none for a
    Python implementation or a command that cannot be split."""
    if kind_named(options.kind).python:
        return []
    try:
        return shlex.split(options.impl)
    except ValueError:
        return []


def _command_folders(options: RunOptions) -> list[str]:
    """The folders of the files a command implementation names (its program, its
    scripts), so that a harness outside the working directory can run, the
    ``node_modules`` folders above a script (a workspace's), and what its program's
    chain of shims and version managers needs to start (:mod:`cer.sandbox.shims`)."""
    words = _command_words(options)
    folders = []
    for index, word in enumerate(words):
        found = shutil.which(word) if index == 0 and os.sep not in word else word
        if found and os.path.exists(found):
            folders.append(os.path.dirname(os.path.realpath(found)))
            folders.append(os.path.dirname(os.path.abspath(found)))
            if index > 0 and os.path.isfile(found):  # a script: what Node resolves for it
                folders.extend(
                    folder
                    for folder in shims.node_module_folders(os.path.dirname(found))
                    if _lendable(folder, set())
                )
    if words:
        folders.extend(shims.chain_reads(words[0]))
    return folders


def _script_folders(options: RunOptions) -> list[str]:
    """The folders of the files a command implementation names after its program (its
    scripts), as given and as real paths."""
    folders: list[str] = []
    for word in _command_words(options)[1:]:
        if os.path.isfile(word):
            folders += [
                os.path.dirname(os.path.abspath(word)),
                os.path.dirname(os.path.realpath(word)),
            ]
    return list(dict.fromkeys(folders))


def _lendable(folder: str, roots: set[str]) -> bool:
    """Whether ``folder``, found on a guess (a link's installation, an editable
    install's package, a ``node_modules``), may be lent whole: not the root, a folder
    just under it or the home folder, not a checkout (:func:`cer.sandbox.in_checkout`), and
    holding none of ``roots``."""
    real = os.path.realpath(folder)
    home = os.path.realpath(os.path.expanduser("~"))
    if real in ("/", home) or os.path.dirname(real) == "/" or _within(home, real):
        return False
    if sandbox.in_checkout(real):
        return False
    return not any(_within(root, real) for root in roots)


def build(
    suite: Suite,
    options: RunOptions,
    scratch: str,
    import_roots: list[str],
    *,
    world: bool = False,
    network: sandbox.Network | None = None,
) -> tuple[sandbox.Policy, list[readset.Refusal]]:
    """The policy of one run, and what it leaves out of the folders the implementation
    is imported from (:mod:`cer.sandbox.readset`), for the reasons of refused reads;
    ``world``: the implementation's side lives in a world built from it; ``network``:
    its network (:attr:`Decision.network`; None: what ``options.network`` gives with
    ``world``)."""
    if network is None:
        network = network_of(options.network, world=world)
    import cer

    named = [*_command_folders(options)]
    named.append(str(Path(cer.__file__).resolve().parent.parent))
    with contextlib.suppress(ResourceMissing):
        # cer's own data: in a source checkout schema.sql sits beside src/, not in it, and
        # an implementation that runs cer (the runner's own suite) opens a history.
        named.append(str(schema_sql_path()))
    named.extend({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})
    named.extend(entry for entry in sys.path if entry)
    named.append(os.path.dirname(os.path.realpath(sys.executable)))
    named.append(sys.executable)
    path_folders = [entry for entry in os.environ.get("PATH", "").split(os.pathsep) if entry]
    named.extend(path_folders)
    # A folder on cer's own path or on PATH that is a checkout is lent like the folders
    # the implementation is imported from: whole but for its version-control metadata
    # and what cer keeps (a checkout on PATH once lent its .git, and the committed
    # suite in it).
    checkouts = [
        entry
        for entry in dict.fromkeys([*sys.path, *path_folders])
        if entry and os.path.isdir(entry) and sandbox.in_checkout(entry)
    ]
    named.append(str(suite.fixtures_dir))
    named.extend(_SYSTEM_READ)
    for link in ("/etc/resolv.conf", "/etc/localtime"):
        named.append(os.path.realpath(link))
    roots = set(map(os.path.realpath, import_roots))
    # The packages editable installs map, and what a program on PATH reached through a
    # link reads beside its target: lent whole, so never a folder that holds an import
    # root (whose entries are lent one by one) or the suite, or a checkout.
    lent_on_a_guess = [
        *editable.mapped_folders(editable.site_folders()),
        *shims.linked_installations(path_folders, lent=_SYSTEM_READ),
    ]
    named.extend(
        folder
        for folder in lent_on_a_guess
        if _lendable(folder, {*roots, str(suite.directory.resolve())})
    )
    # What the implementation may write is named too: the run's scratch folder sits in
    # the temporary folder, which may itself be the suite's folder or the working
    # directory, and must not be left out there as a file no import takes.
    named.extend(path for path in (scratch, *_SYSTEM_WRITE) if path)
    kept = protected_paths(suite, options)
    # The folders of a command's scripts are lent like import roots: whole, but for
    # version-control metadata and what cer keeps (a harness at a checkout's root once
    # lent its .git, and with it the committed suite).
    refusal_roots = [*import_roots, *_script_folders(options)]
    roots |= set(map(os.path.realpath, [*refusal_roots, *checkouts]))
    others = [path for path in named if os.path.realpath(path) not in roots]
    outputs = readset.remembered_outputs()
    sockets = readset.machine_sockets()
    refused = readset.refusals(
        refusal_roots,
        python=kind_named(options.kind).python,
        kept=kept,
        named=others,
        extra=options.sandbox_read,
        outputs=outputs,
        sockets=sockets,
    )
    if checkouts:
        found = {refusal.path for refusal in refused}
        refused += [
            refusal
            for refusal in readset.refusals(
                checkouts,
                python=False,
                kept=kept,
                named=others,
                extra=options.sandbox_read,
                outputs=outputs,
                sockets=sockets,
            )
            if refusal.path not in found
        ]
    policy = sandbox.expand(
        [*import_roots, *named, *options.sandbox_read],
        [scratch, *_SYSTEM_WRITE],
        [refusal.path for refusal in refused],
        network=network,
        scratch=scratch,
    )
    return replace(policy, world=world), refused


_DENIED = re.compile(
    r"(?:\[Errno 13\] Permission denied: |\[Errno 1\] Operation not permitted: "
    r"|\[Errno 30\] Read-only file system: "
    r"|EACCES: permission denied, \w+ |EPERM: operation not permitted, \w+ "
    r"|EROFS: read-only file system, \w+ )'([^']+)'"
)


_ABSENT = re.compile(
    r"(?:\[Errno 2\] No such file or directory: |ENOENT: no such file or directory, \w+ )'([^']+)'"
)
"""A path not found: in the implementation's world, what the policy does not lend is
absent, not refused."""


_NETWORK_DENIED = re.compile(
    r"PermissionError: \[Errno 13\] Permission denied(?!:)|\b(?:connect|listen|bind) EACCES\b"
)
"""A refused connect, bind or listen: Python's error names no path, Node's the call."""


_UNREACHED = re.compile(
    r"\[Errno (?:101|111|-2|-3)\]|\b(?:ENETUNREACH|ECONNREFUSED|EAI_AGAIN)\b"
    r"|Network is unreachable|Connection refused|Temporary failure in name resolution"
)
"""A server not reached: no route (Python's ``[Errno 101]``, Node's ``ENETUNREACH``),
nobody listening (``[Errno 111]``, ``ECONNREFUSED``), or a name not resolved
(``[Errno -2]``, ``[Errno -3]``, ``EAI_AGAIN``)."""


def explain_denial(
    reason: str, policy: sandbox.Policy, refused: Sequence[readset.Refusal] = ()
) -> str:
    """``reason`` with a note naming the path the sandbox refused, and the option that
    would allow it, when it holds a permission error for a path (Python's and Node's
    wording) that the policy does not allow; unchanged otherwise."""
    if policy.network == "deny" and _NETWORK_DENIED.search(reason):
        return (
            f"{reason}; the sandbox refused a TCP connection or listening socket "
            "(--network deny; --network allow lets the implementation use TCP)"
        )
    if policy.network != "allow" and _UNREACHED.search(reason):
        return (
            f"{reason}; the implementation has a network of its own, loopback only, in "
            "which no server of this machine or beyond is (--network allow lends it the "
            "machine's network)"
        )
    match = _DENIED.search(reason)  # Python's wording, then Node's
    if match is None and policy.world:
        match = _ABSENT.search(reason)
        if match is not None and not os.path.lexists(os.path.join(os.getcwd(), match.group(1))):
            return reason  # not there outside the world either: simply missing
    if match is None or "the sandbox denied access" in reason:
        return reason
    path = match.group(1)
    if not os.path.isabs(path):
        if os.sep not in path and shutil.which(path) is not None:
            return reason  # a program run by name, not a file of the working directory
        try:
            # The implementation runs in the runner's working directory.
            path = os.path.join(os.getcwd(), path)
        except OSError:
            return reason
    if any(_within(path, root) for root in policy.write):
        return reason
    target = os.path.abspath(path)
    real = os.path.realpath(target)
    if not os.path.lexists(real) and not any(_within(real, root) for root in policy.read):
        # Refused a path that is not there: making it (a read of a missing file fails
        # with "no such file"), which --sandbox-read would not allow.
        return (
            f"{reason}; the sandbox denied making {target} (the implementation may make "
            "files only in its scratch folder, the one TMPDIR names)"
        )
    for refusal in refused:
        if _within(real, refusal.path) or _within(target, refusal.path):
            if refusal.why == "cer":
                break
            return (
                f"{reason}; the sandbox denied access to {target} (not in the "
                f"implementation's allowed paths: {refusal.explain(target)})"
            )
    else:
        if not any(_within(target, root) for root in policy.read):
            return (
                f"{reason}; the sandbox denied access to {target} (not in the "
                f"implementation's allowed paths; allow it with --sandbox-read {target})"
            )
    return f"{reason}; {policy.explain(path)}"


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
