"""The worker process: imports the implementation once and runs cases on request.

Started fresh by the supervisor for every run (``python -m cer.worker CTRL_IN CTRL_OUT``),
so edited code is always re-imported. It talks to the supervisor only through two
private pipes. With fork isolation each case runs in a forked child that has its own
process group, an empty stdin, captured stdout and stderr, and a private result pipe;
the worker itself runs no implementation code after the import, and enforces the
per-case timeout by killing the child's whole process group. With no isolation the
case runs in the worker, which the supervisor watches and recycles on any anomaly.

The worker never decides a verdict: it reports what it observed.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import importlib
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from cer import sandbox
from cer.process_tree import (
    become_subreaper,
    children_of,
    kill_strays,
    signal_name,
)
from cer.sandbox import scratch
from cer.wire import plaindata
from cer.wire.framing import (
    HEADER,
    KIND_CASE,
    KIND_JSON,
    KIND_RAW,
    MAX_FRAME,
    FrameError,
    pack,
    read_exact,
    read_frame,
    write_all,
)
from cer.wire.messages import CRASH_KINDS, SEQ, CaseMessage, Exit, WorkerMessage
from cer.worker.call import (
    STDLIB,
    StdlibTrees,
    execute_case,
    keep_state,
    source_files,
)
from cer.worker.isolation import (
    NO_FD,
    Child,
    close_quietly,
    confine_memory_buffers,
    confine_memory_case,
    flush_std_streams,
    parent_death_signal_setter,
    read_available,
    rehearse,
)
from cer.worker.snapshot import (
    Snapshot,
)
from cer.worker.target import Target

_RESULT_LIMIT = 64 * 1024 * 1024
_STARTED = b"S"
"""What a case's process writes first on its result pipe, once it has read its case."""
_SEQ = SEQ
"""The sequence number in front of a case message from the supervisor."""
_HEADER = HEADER
# Bound once: a case running inside the worker (no isolation) may rebind time's names.
_monotonic = time.monotonic
_perf_counter = time.perf_counter
_pidfd_open = getattr(os, "pidfd_open", None)


class Worker:
    """The worker's state: its channels, the loaded implementation and its settings."""

    def __init__(self, ctrl_in: int, ctrl_out: int) -> None:
        self.ctrl_in = ctrl_in
        self.ctrl_out = ctrl_out
        self.target: Target | None = None
        self.alone = False
        """This worker runs one case inline and ends: after a case that crashed (an
        exception outside Exception, a thread's failure), it ends itself, so that the
        supervisor sees the crash as its own child's end."""
        self.isolation = "fork"
        self.capture_limit = 65536
        self.max_memory: int | None = None
        self.timeout = 10.0
        self.devnull = os.open(os.devnull, os.O_RDONLY)
        self.capture_fd = NO_FD
        self._capture_used = True
        """Whether the capture may hold anything (then it is emptied before a case)."""
        self.set_death_signal = parent_death_signal_setter()
        self.set_memory_limit: Callable[[], None] = lambda: None
        self.sandbox_abi = 0
        """The Landlock ABI this worker confined itself with (0: not sandboxed)."""
        self.case_ruleset = NO_FD
        """The ruleset each case's process enters (fork isolation in the sandbox)."""
        self.run_scratch = ""
        """The run's scratch folder; this worker's cases get a folder inside it."""
        self.case_folder: scratch.CaseFolder | None = None
        """The scratch folder of this worker's cases (``TMPDIR``), made after the
        import and emptied after each case: the only folder a case's process may write
        to. It stays the same folder, so that each case's process enters a Landlock
        ruleset made once and inherits the variables that point at it."""
        self.case_write: tuple[str, ...] = ()
        """Where a case may write besides its scratch folder (/dev/null, /dev/shm)."""
        self.unusable: str | None = None
        """Why this worker can run no more cases (its cases' scratch folder could not
        be made again), or None: it answers the next case as never started, so that
        the case goes to a new worker and is not charged with this one's end."""
        self.spare: Child | None = None
        """The next case's process, forked ahead of time (fork isolation)."""
        self.running: Child | None = None
        """The process of the case in progress (fork isolation)."""
        self._case_seq = 0
        self._helpers: dict[int, int] = {}
        """The processes the implementation's import started (children of the worker's
        then), each with a pidfd (or NO_FD) that tells when that process has ended:
        they are kept from case to case, everything else a case leaves is killed."""
        self._started = 0.0
        # Bound once: without isolation a case runs in this process, and rebinding these
        # module names must not change what the worker tells the supervisor.
        self._channel = (plaindata.dumps, pack, write_all)
        self._snapshot: Snapshot | None = None
        """The state every case inside the worker must leave as it found it (no
        isolation); taken before the first case and kept while no case changes it."""

    # --- channel -------------------------------------------------------------------

    def send(self, message: WorkerMessage, raw: bytes | None = None) -> None:
        dumps, pack_frame, write = self._channel
        data = pack_frame(KIND_JSON, dumps(message))
        if raw is not None:
            data += pack_frame(KIND_RAW, raw)
        write(self.ctrl_out, data)

    # --- capture of the worker's own stdout/stderr (import time, no isolation) -------

    def _open_capture(self) -> None:
        if hasattr(os, "memfd_create"):
            self.capture_fd = os.memfd_create("cer-capture")
        else:  # pragma: no cover - non-Linux
            import tempfile

            with tempfile.TemporaryFile() as handle:
                self.capture_fd = os.dup(handle.fileno())
        os.dup2(self.devnull, 0)
        os.dup2(self.capture_fd, 1)
        os.dup2(self.capture_fd, 2)

    def _reset_capture(self) -> None:
        flush_std_streams()
        # A case may have closed or redirected the standard descriptors: point them
        # back at the capture before the next one runs.
        os.dup2(self.devnull, 0)
        os.dup2(self.capture_fd, 1)
        os.dup2(self.capture_fd, 2)
        if self._capture_used:
            os.ftruncate(self.capture_fd, 0)
            os.lseek(self.capture_fd, 0, os.SEEK_SET)
            self._capture_used = False
        # fds 1 and 2 share the file offset with capture_fd through dup2.

    def _take_capture(self) -> tuple[str, int]:
        flush_std_streams()
        size = os.fstat(self.capture_fd).st_size
        if not size and not os.lseek(self.capture_fd, 0, os.SEEK_CUR):
            return "", 0  # nothing written (the usual case): nothing to read or clear
        self._capture_used = True
        data = os.pread(self.capture_fd, min(size, self.capture_limit), 0)
        return data.decode("utf-8", "replace"), max(0, size - self.capture_limit)

    # --- loading ---------------------------------------------------------------------

    def load(self, message: dict[str, Any]) -> None:
        self.alone = bool(message.get("alone"))
        if message.get("confine"):
            # Before the import: nothing of the implementation's can undo it.
            why = confine_memory_case()
            self.send({"op": "confined", "ok": why is None, "why": why or ""})
        self.isolation = message["isolation"]
        self.capture_limit = int(message["capture_limit"])
        self.max_memory = message.get("max_memory")
        self.timeout = float(message["timeout"])
        before = set(sys.modules)
        stdlib = StdlibTrees.find()  # before the import, which may change what it sees
        STDLIB[:] = [stdlib]
        if self.max_memory:
            import resource

            limit = (self.max_memory, self.max_memory)
            if self.isolation != "fork":
                resource.setrlimit(resource.RLIMIT_AS, limit)
            else:  # applied in each case's process; imported here, not once per case
                self.set_memory_limit = lambda: resource.setrlimit(resource.RLIMIT_AS, limit)
        # A case whose memory is measured gets no PID namespace: its worker may start
        # no process (see confine_memory_case), and stays the process the supervisor
        # measures.
        failure = self._confine(
            message.get("sandbox"), message.get("sandbox_abi"), pids=not message.get("confine")
        )
        if failure is not None:
            self.send({"op": "loaded", "ok": False, "reason": failure, "files": []})
            return
        self._open_capture()
        self._reset_capture()
        if message.get("no_buffers"):
            # After the world, which makes a socket of its own; before the import.
            why = confine_memory_buffers()
            if why is not None:
                reason = f"pipes and sockets could not be forbidden ({why})"
                self.send({"op": "loaded", "ok": False, "reason": reason, "files": []})
                return
        # Only now, inside the sandbox and with everything of the worker's own
        # imported: a module in an import root named like one the worker imports
        # (`sysconfig`, `resource`) is the implementation's code, and runs confined.
        for path in reversed(message["paths"]):
            if path not in sys.path:
                sys.path.insert(0, path)
        module_name, _, attr = message["impl"].partition(":")
        try:
            if not module_name or not attr:
                raise ValueError(f"--impl must look like MODULE:ATTR, got {message['impl']!r}")
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
            self.target = Target(obj)
        except BaseException as exc:
            output, _ = self._take_capture()
            self.send(
                {
                    "op": "loaded",
                    "ok": False,
                    "reason": f"{type(exc).__name__}: {exc}",
                    "traceback": "".join(traceback.format_exception(exc)),
                    "output": output,
                    "files": source_files(before, stdlib),
                }
            )
            return
        # Every case starts from the same heap: garbage the import left behind (which
        # a case walking gc.get_objects() could otherwise trip over) is gone first.
        gc.collect()
        output, _ = self._take_capture()
        # After the import, so that nothing of it is there for a case; before the answer,
        # so that a worker that has no folder for its cases says so and runs none.
        unmade = self._new_case_folder() if self.run_scratch else None
        if unmade is not None:
            self.unusable = unmade  # a case sent all the same is never started
            self.send(
                {
                    "op": "loaded",
                    "ok": False,
                    "reason": unmade,
                    "output": output,
                    "files": source_files(before, stdlib),
                }
            )
            return
        self.send(
            {
                "op": "loaded",
                "ok": True,
                "kind": self.target.kind,
                "output": output,
                "files": source_files(before, stdlib),
            }
        )
        keep_state()  # after everything the worker itself imports, before any fork
        self._helpers = _watch(children_of(os.getpid()))
        if self.isolation == "fork":
            # At a timeout the worker asks for the case's stack before the kill. The
            # handler, set here once, is inherited by every case's process, where it
            # writes to descriptor 2: the stderr pipe, read apart from the case's own.
            with contextlib.suppress(RuntimeError, ValueError, OSError):
                faulthandler.register(STACK_SIGNAL, all_threads=True, chain=False)
            self._make_case_ruleset()
            self.spare = self._fork_child()  # ready before the first case arrives

    def _confine(self, policy_text: Any, abi: Any, *, pids: bool = True) -> str | None:
        """Apply the run's sandbox policy before anything of the implementation is
        imported, so that the import, every case process and everything they start
        are confined; the reason when it cannot be applied (the run then errors).
        Where the policy asks for a world, it is built here, once for this worker and
        every case process it forks (with ``pids``, this process forks: the parent
        stays outside as a relay, and the worker goes on as process 1 of its world)."""
        if not policy_text:
            return None
        try:
            policy = sandbox.Policy.from_json(str(policy_text))
            os.environ.update(policy.environment())
            if policy.scratch:
                self.run_scratch = policy.scratch
                run = os.path.realpath(policy.scratch)
                self.case_write = tuple(path for path in policy.write if path != run)
            if "tempfile" in sys.modules:  # forget a temporary folder chosen earlier
                vars(sys.modules["tempfile"])["tempdir"] = None
            self.sandbox_abi = sandbox.apply(policy, int(abi) if abi else None, pids=pids)
        except (sandbox.SandboxError, ValueError, KeyError) as exc:
            return f"the sandbox could not be applied: {exc}"
        return None

    # --- running cases ---------------------------------------------------------------

    def run_case(self, seq: int, body: bytes) -> None:
        """Run the case whose encoded message is ``body`` (no isolation only; with fork
        isolation the main loop calls :meth:`hand_over` and :meth:`finish_case`)."""
        assert self.target is not None
        message = plaindata.loads(body)
        self._run_inline(seq, message)

    def _run_inline(self, seq: int, message: CaseMessage) -> None:
        assert self.target is not None
        # A case that changed nothing left the state equal to the snapshot, so the
        # snapshot stays valid for the next case; any change ends the worker below.
        snapshot = self._snapshot
        if snapshot is None:
            snapshot = self._snapshot = Snapshot.take()
        self._reset_capture()
        payload = execute_case(self.target, message)
        output, dropped = self._take_capture()
        strays = kill_strays(self._kept())
        anomaly = snapshot.differences()  # a changed TMPDIR among them
        if strays:
            left = f"left {strays} child process{'es' if strays != 1 else ''} running"
            anomaly = f"{anomaly}; {left}" if anomaly else left
        if not anomaly:  # else the worker ends, and its folder goes with the run's
            # Before the result: the next case is handed over as soon as it arrives and
            # timed from there, so what this case left costs its own time, not the next's.
            self._empty_case_folder()
        self.send(
            {
                "op": "result",
                "seq": seq,
                "exit": {"how": "inline"},
                "stdout": output,
                "stderr": "",
                "dropped": dropped,
                "anomaly": anomaly,
            },
            payload,
        )
        if self.alone and plaindata.loads(payload).get("k") in CRASH_KINDS:
            os._exit(70)
        if anomaly and not self.alone:
            # Its folder goes with the run's. A worker of one case waits to be told to
            # quit: the supervisor reads its memory from the kernel once it answered.
            os._exit(0)

    def _new_case_folder(self) -> str | None:
        """Make this worker's cases' scratch folder and point the temporary-file
        variables at it (``TMPDIR``, ``TEMP``, ``TMP``, and ``tempfile``'s choice).
        Why it could not be made (a full file system, say), or None."""
        name = f"worker-{os.urandom(8).hex()}"
        self.case_folder = None
        try:
            self.case_folder = scratch.CaseFolder.make(self.run_scratch, name)
        except OSError as exc:
            return f"the cases' scratch folder could not be made: {exc}"
        folder = self.case_folder.path
        environ = os.environ
        environ["TMPDIR"] = environ["TEMP"] = environ["TMP"] = folder
        module = sys.modules.get("tempfile")
        if module is not None:
            vars(module)["tempdir"] = None
        return None

    def _make_case_ruleset(self) -> None:
        """Make the ruleset each case's process enters (fork isolation in the sandbox):
        a domain of its own inside the worker's that may write only to the cases'
        scratch folder, ``/dev/null`` and ``/dev/shm``. Where it cannot be made, each
        case's process makes its own layer."""
        if self.case_ruleset != NO_FD:
            close_quietly(self.case_ruleset)
            self.case_ruleset = NO_FD
        if not self.sandbox_abi:
            return
        folder = self.case_folder
        write = (folder.path, *self.case_write) if folder is not None else None
        with contextlib.suppress(sandbox.SandboxError):
            self.case_ruleset = sandbox.case_ruleset(self.sandbox_abi, write)

    def _empty_case_folder(self) -> None:
        """Leave the cases' scratch folder as it was made, once nothing of the ended
        case is alive: usually it is (a few system calls); else everything in it goes,
        and a folder that cannot be emptied is replaced by a new one, with a new ruleset
        and a new spare."""
        folder = self.case_folder
        if folder is None or folder.untouched() or folder.empty():
            return
        scratch.remove(folder.path)  # what is left of it goes with the run's folder
        self.unusable = self._new_case_folder()
        self._snapshot = None  # the variables changed: the next case takes it anew
        if self.isolation == "fork":
            self.discard_spare()  # it would enter the old ruleset, with the old TMPDIR
            self._make_case_ruleset()

    def _kept(self) -> frozenset[int]:
        """The helpers to keep after a case: those still the processes the import started.

        One that ended is no longer kept (it is reaped with the strays), so that its pid,
        once free, can never make a process a case started look like a helper.
        """
        helpers = self._helpers
        if not helpers:
            return frozenset()
        watched = [fd for fd in helpers.values() if fd != NO_FD]
        if watched:
            ended = set(select.select(watched, [], [], 0)[0])
            if ended:
                for pid, fd in list(helpers.items()):
                    if fd in ended:
                        os.close(fd)
                        del helpers[pid]
        return frozenset(helpers)

    # --- fork isolation --------------------------------------------------------------

    def _own_fds(self) -> list[int]:
        """Descriptors of the worker's own that a newly forked case process must close."""
        fds = [self.ctrl_in, self.ctrl_out]
        if self.capture_fd != NO_FD:
            fds.append(self.capture_fd)
        if self.case_ruleset != NO_FD:
            fds.append(self.case_ruleset)
        fds.extend(fd for fd in self._helpers.values() if fd != NO_FD)
        for child in (self.running, self.spare):
            if child is not None:
                fds.extend(child.worker_fds())
        return fds

    def _fork_child(self) -> Child:
        """Fork a process that waits for its case; see :class:`Child`."""
        token = os.urandom(16)
        input_r, input_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        close = (input_w, result_r, out_r, err_r, *self._own_fds())
        flush_std_streams()
        pid = os.fork()
        if pid == 0:  # the case's own process
            try:
                self._child_main(token, input_r, result_w, out_w, err_w, close)
            finally:
                os._exit(0)
        try:  # noqa: SIM105 - see close_quietly
            os.setpgid(pid, pid)
        except OSError:
            pass
        for fd in (input_r, result_w, out_w, err_w):
            os.close(fd)
        for fd in (result_r, out_r, err_r):
            os.set_blocking(fd, False)
        pidfd = NO_FD
        if _pidfd_open is not None:
            try:
                pidfd = _pidfd_open(pid)
            except OSError:
                pidfd = NO_FD
        return Child(pid, token, input_w, result_r, out_r, err_r, pidfd)

    def _child_main(
        self,
        token: bytes,
        input_r: int,
        result_w: int,
        out_w: int,
        err_w: int,
        close: tuple[int, ...],
    ) -> None:
        """The case's process: wait for the case, then run it and report."""
        assert self.target is not None
        os.setpgid(0, 0)
        self.set_death_signal()
        if self.sandbox_abi:
            # A domain of its own inside the worker's: the case cannot signal or trace
            # the worker, nor any other case, and may write only to the cases' scratch
            # folder (emptied by the worker after every case), not beside it.
            if self.case_ruleset != NO_FD:
                sandbox.enter_case(self.case_ruleset)
            elif self.case_folder is not None:
                folder = self.case_folder.path
                sandbox.confine_case_within(self.sandbox_abi, (folder, *self.case_write))
            else:
                sandbox.confine_case(self.sandbox_abi)
        for fd in close:
            close_quietly(fd)
        os.dup2(self.devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        rehearse()
        try:
            # Each part is checked as soon as it arrives, so that bytes some other
            # process wrote into the pipe end this spare at once rather than at a timeout.
            length, kind = _HEADER.unpack(read_exact(input_r, _HEADER.size))
            if kind != KIND_CASE or not len(token) <= length <= MAX_FRAME:
                return
            if read_exact(input_r, len(token)) != token:
                return  # not the worker's frame: the case is never started
            body = read_exact(input_r, length - len(token))
        except (EOFError, OSError):
            return  # the worker discarded this spare, or something broke its pipe
        os.close(input_r)
        write_all(result_w, _STARTED)
        message = plaindata.loads(body)
        del body
        self.set_memory_limit()
        payload = execute_case(self.target, message)
        flush_std_streams()
        write_all(result_w, pack(KIND_RAW, payload))

    def hand_over(self, seq: int, body: bytes) -> None:
        """Give the case to the spare process (forking one if there is no good spare).

        Called with nothing of the previous case alive, which is when a spare is
        checked. The caller drops ``body`` before :meth:`finish_case` forks the next
        spare, so that no process of another case holds this case's input.
        """
        child = self.spare
        self.spare = None
        if child is None or not child.untouched():
            if child is not None:
                child.discard()
            child = self._fork_child()
        self.running = child
        self._case_seq = seq
        self._started = _monotonic()
        with contextlib.suppress(OSError):  # a dead spare: reported as never started
            write_all(child.input_w, pack(KIND_CASE, child.token + body))
        os.close(child.input_w)
        child.input_w = NO_FD

    def finish_case(self) -> None:
        """Fork the next spare while the case runs, then supervise the case and report."""
        child = self.running
        assert child is not None
        try:
            self.spare = self._fork_child()
        except OSError:  # no spare now; the next case forks its own process
            self.spare = None
        try:
            message, raw = self._supervise_child(child)
        finally:
            self.running = None
            child.close_fds()
        # Nothing of the case is alive now: what it left in the scratch folder goes
        # before its result is sent. The next case is handed over as soon as the result
        # arrives and timed from there, so the emptying costs this case's time.
        self._empty_case_folder()
        self.send(message, raw)

    def refuse(self, seq: int) -> None:
        """Answer case ``seq`` as never started and end: this worker has no scratch
        folder for it (:attr:`unusable`). Nothing of the implementation ran for it, so
        the supervisor hands it to a new worker, which says at its load why it cannot
        run cases, if it cannot either."""
        self.discard_spare()
        self.send({"op": "result", "seq": seq, "exit": {"how": "unstarted"}}, b"")
        kill_strays()
        os._exit(0)

    def discard_spare(self) -> None:
        if self.spare is not None:
            self.spare.discard()
            self.spare = None

    def _supervise_child(self, child: Child) -> tuple[WorkerMessage, bytes]:
        """Wait for the case's process to answer, end or pass its deadline, end what it
        left running, and return its result message and payload (sent by the caller)."""
        seq, pid, started = self._case_seq, child.pid, self._started
        deadline = started + self.timeout
        result = bytearray()
        out = bytearray()
        err = bytearray()
        result_r, out_r, err_r, pidfd = child.result_r, child.out_r, child.err_r, child.pidfd
        dropped = {out_r: 0, err_r: 0}
        sinks = {result_r: result, out_r: out, err_r: err}
        limit = self.capture_limit
        limits = {result_r: _RESULT_LIMIT + 16, out_r: limit, err_r: limit}
        poller = select.poll()
        for fd in sinks:
            poller.register(fd, select.POLLIN)
        if pidfd != NO_FD:
            poller.register(pidfd, select.POLLIN)
        open_fds = set(sinks)
        status: int | None = None
        how: Exit | None = None
        stack = b""
        while status is None:
            remaining = deadline - _monotonic()
            if remaining <= 0:
                how = {"how": "timeout"}
                stack = _ask_for_stack(pid, err_r, err, limit)
                break
            wait_ms = remaining * 1000 if pidfd != NO_FD else min(remaining * 1000, 5)
            exited = pidfd == NO_FD
            for fd, _event in poller.poll(wait_ms):
                if fd == pidfd:
                    exited = True
                    continue
                still_open, lost = read_available(fd, sinks[fd], limits[fd])
                if fd in dropped:
                    dropped[fd] += lost
                if not still_open:
                    poller.unregister(fd)
                    open_fds.discard(fd)
            if len(result) > _RESULT_LIMIT:
                how = {"how": "too_large"}
                break
            if exited:
                waited, raw_status = os.waitpid(pid, os.WNOHANG)
                if waited:
                    status = raw_status
        # Whatever happened, nothing of the case may outlive it: its process group, and
        # whatever it started in a session of its own (adopted here, as the subreaper).
        try:  # noqa: SIM105 - see close_quietly
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if status is None:
            _, status = os.waitpid(pid, 0)
        keep = self._kept()
        strays = kill_strays(keep if self.spare is None else keep | {self.spare.pid})
        for fd in list(open_fds):
            for _ in range(64):  # bounded: all writers are gone, only buffers remain
                still_open, lost = read_available(fd, sinks[fd], limits[fd])
                if fd in dropped:
                    dropped[fd] += lost
                if not still_open or not _has_data(fd):
                    break
        if not result.startswith(_STARTED):
            # The process never started the case (it was disturbed before it read it):
            # the supervisor sends the case again; nothing of the implementation ran.
            return {"op": "result", "seq": seq, "exit": {"how": "unstarted"}}, b""
        if how is None:
            if os.WIFSIGNALED(status):
                number = os.WTERMSIG(status)
                how = {"how": "signal", "signal": number, "name": signal_name(number)}
            else:
                how = {"how": "exited", "code": os.WEXITSTATUS(status)}
        return (
            {
                "op": "result",
                "seq": seq,
                "exit": how,
                "stdout": out.decode("utf-8", "replace"),
                "stderr": err.decode("utf-8", "replace"),
                "dropped": dropped[out_r] + dropped[err_r],
                "anomaly": None,
                "strays": strays,
                "stack": stack.decode("utf-8", "replace"),
            },
            bytes(memoryview(result)[len(_STARTED) :]),
        )


STACK_SIGNAL = signal.SIGUSR2
"""The signal that makes a timed-out case's process dump its stack (faulthandler)."""

STACK_LIMIT = 16 * 1024
"""Bytes of a timed-out case's stack kept."""

STACK_WAIT = 0.2
"""Seconds the worker waits for the stack before the kill, at most."""


def _ask_for_stack(pid: int, err_r: int, err: bytearray, limit: int) -> bytes:
    """Signal the timed-out case's process to dump its stack, and read the dump.

    What the case wrote to stderr before is read into ``err`` first, so that the dump
    is what comes after the signal. The wait is bounded (:data:`STACK_WAIT`) and so is
    the dump (:data:`STACK_LIMIT`): a case that blocks the signal or floods its stderr
    costs a fraction of a second, and what it sent is data, shown as its stack.
    """
    for _ in range(64):
        still_open, _lost = read_available(err_r, err, limit)
        if not still_open or not _has_data(err_r):
            break
    try:
        os.kill(pid, STACK_SIGNAL)
    except OSError:
        return b""
    stack = bytearray()
    deadline = _monotonic() + STACK_WAIT
    while len(stack) < STACK_LIMIT:
        remaining = deadline - _monotonic()
        if remaining <= 0:
            break
        ready, _, _ = select.select([err_r], [], [], min(remaining, 0.05))
        if not ready:
            if stack:
                break  # the dump is written at once: a pause means it is complete
            continue
        still_open, _lost = read_available(err_r, stack, STACK_LIMIT)
        if not still_open:
            break
    return bytes(stack)


def _watch(pids: list[int]) -> dict[int, int]:
    """Each pid with a pidfd for it (NO_FD where there is none)."""
    watched = {}
    for pid in pids:
        fd = NO_FD
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                fd = os.pidfd_open(pid)
        watched[pid] = fd
    return watched


def _has_data(fd: int) -> bool:
    ready, _, _ = select.select([fd], [], [], 0)
    return bool(ready)


def main(argv: list[str] | None = None) -> None:
    """Serve the supervisor until it says quit or closes the channel."""
    args = sys.argv[1:] if argv is None else argv
    worker = Worker(int(args[0]), int(args[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    become_subreaper()
    while True:
        try:
            kind, data = read_frame(worker.ctrl_in)
        except (EOFError, OSError, FrameError):
            worker.discard_spare()
            kill_strays()
            os._exit(0)
        if kind == KIND_CASE and worker.target is not None and len(data) >= _SEQ.size:
            (seq,) = _SEQ.unpack_from(data)
            if worker.unusable is not None:
                worker.refuse(seq)
            if worker.isolation == "fork":
                worker.hand_over(seq, data[_SEQ.size :])
                del data  # the next case's process is forked without this case's input
                worker.finish_case()
            else:
                worker.run_case(seq, data[_SEQ.size :])
                del data
            continue
        if kind != KIND_JSON:
            os._exit(3)
        message = plaindata.loads(data)
        op = message.get("op")
        if op == "load":
            worker.load(message)
        elif op == "quit":
            worker.discard_spare()
            kill_strays()  # whatever the implementation started ends with the run
            os._exit(0)
