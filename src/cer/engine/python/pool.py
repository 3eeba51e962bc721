"""The backend of a Python implementation: a pool of worker processes.

Each lane holds one worker (``python -m cer.worker``), restarted when it is lost (a
lost worker costs the case it was running and no other, see :mod:`cer.engine.restarts`); one
thread waits on every worker's channel at once, hands each its next case in declared
order, enforces every deadline from outside, and turns each reported observation into
a verdict through :mod:`cer.judge.verdict`. See docs/execution-model.md.
"""

from __future__ import annotations

import select
import time
from collections import deque
from dataclasses import dataclass, replace

from cer.engine.execution import Setup
from cer.engine.identity import Identity, one_off_id
from cer.engine.options import (
    resolve_jobs,
)
from cer.engine.plan import Planned
from cer.engine.python.imports import LOAD_TIMEOUT_MIN, Imports, known_id
from cer.engine.python.provided import Provided, code_changed
from cer.engine.python.state import PythonExecution
from cer.engine.python.workerproc import (
    POLL,
    REPORT_GRACE,
    Message,
    WarmWorkers,
    WorkerLost,
    WorkerProcess,
    case_id,
    encode_case,
)
from cer.engine.restarts import START_ATTEMPTS, Restarts
from cer.judge.verdict import (
    Outcome,
    asks_memory,
    errored,
    judge,
    outcome_from_worker,
)
from cer.model import FailClass

PROVIDED_MEMORY = (
    "could not verify resident_memory_mb: the implementation was given as an object, so "
    "its worker is a fork of the calling process, whose memory the kernel's account of "
    "the worker holds too; cer measures a case's memory only for an implementation it "
    "imports (MODULE:ATTR)"
)
"""The reason of a case asking about memory when the implementation is an object."""


@dataclass
class _Flight:
    """A case sent to a worker and not answered yet."""

    seq: int
    item: Planned
    sent_at: float
    """When this hand-over happened: a message read before it cannot answer it."""
    clock: float = 0.0
    """When the case was first handed over, to any worker: its deadline and elapsed
    time run from there, whatever hand-over this is (see :meth:`WorkerPool.hand_over`)."""


class _Lane:
    """One worker process and the cases it holds; restarted when it is lost."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.worker: WorkerProcess | None = None
        self.loading = False
        """A load request was sent and not answered yet."""
        self.load_deadline = 0.0
        self.retired = False
        self.in_flight: deque[_Flight] = deque()
        self.losses = 0
        """Losses of this lane's worker since a case of it last finished: the restart
        that follows waits longer the more there were (:class:`Restarts`)."""
        self.revive_at = 0.0
        """When this lane's worker may be started again (the wait before a restart)."""
        self.was_lost = False
        """The lane's last worker was lost (not ended as asked): the next start is a
        restart, timed and counted in the run's note."""
        self.restart_began = 0.0
        """When the restart in progress began (0.0: none), to time it until loaded."""
        self.failed_loads = 0
        """Restarted workers of this lane in a row that could not load the
        implementation again."""
        self.reported_late = False
        """The case in flight passed its deadline; the worker's own report is awaited
        for a short grace, so that the worker can be kept."""
        self.expecting_exit = False
        """The worker said it changed state and will exit (no isolation)."""
        self.exit_deadline = 0.0
        """When a worker that said it will exit is ended if it has not (it is on the
        implementation's side: its word that it will exit is no reason to wait)."""
        self.handed = 0
        """Cases handed to this lane's worker; 0 for a fresh worker, which alone may
        take a case handed over before (it cannot have prepared an answer)."""


class WorkerPool(PythonExecution):
    """Runs the cases of a Python implementation in worker processes.

    Built like :class:`~cer.engine.python.state.PythonExecution`: the run's setup, the
    warm workers it may take, and the implementation when it was given as an object."""

    def __init__(
        self,
        setup: Setup,
        *,
        warm: WarmWorkers | None = None,
        provided: Provided | None = None,
    ) -> None:
        super().__init__(setup, warm=warm, provided=provided)
        suite = setup.suite
        self.imports = Imports(self)
        """The implementation as the workers import it: the run's id and events."""
        self.lanes: list[_Lane] = []
        self.pending: deque[Planned] = deque()
        self._attempts: dict[int, int] = {}
        self._first_clock: dict[int, float] = {}
        """Case position → when it was first handed over: a case keeps that clock."""
        self._encoded: tuple[Planned, bytes] | None = None
        """The case the queue hands out next, encoded ahead while workers run (see
        :meth:`encode_ahead`)."""
        self.restarts = Restarts("a worker", len(suite.cases))
        """The run's restarts of lost workers, said in its notes (see :meth:`run`)."""

    encode = staticmethod(encode_case)
    """The case message of a planned case (:func:`cer.engine.python.workerproc.encode_case`)."""

    def start_lane(self, lane: _Lane) -> None:
        """Start the lane's worker (a warm one when there is one) and ask it to load
        the implementation; the answer arrives in :meth:`execute`'s loop."""
        worker = self.warm.take() if self.warm is not None and not self.provided else None
        if worker is None:
            worker = self.new_worker()
        worker.write_timeout = self.options.timeout
        if lane.was_lost:
            lane.restart_began = time.monotonic()
            lane.was_lost = False
        lane.worker = worker
        lane.handed = 0
        lane.loading = True
        lane.reported_late = False
        lane.expecting_exit = False
        lane.load_deadline = time.monotonic() + self.load_timeout()
        worker.send(self.imports.load_request(self.options.isolation))

    def load_timeout(self) -> float:
        """How long a worker may take to load the implementation."""
        return max(LOAD_TIMEOUT_MIN, self.options.timeout)

    def new_worker(self) -> WorkerProcess:
        """A new worker: a fresh interpreter, or for an implementation given as an
        object, a fork of this process that holds it (:mod:`cer.engine.python.provided`)."""
        if self.provided is not None:
            self.check_provided_code()
            return WorkerProcess(provided=self.options.implementation)
        return WorkerProcess()

    def check_provided_code(self) -> None:
        """Before a worker is forked: when the code of the implementation given as an
        object changed since the run named it (:func:`cer.engine.python.provided.code_changed`),
        the run's id becomes a one-off, with a note, since that worker runs other code."""
        provided = self.provided
        implementation = self.options.implementation
        if provided is None or implementation is None or not code_changed(provided, implementation):
            return
        prefix = provided.identity.implementation_id.rpartition("@")[0]
        identity = Identity(one_off_id(prefix), provided.identity.files)
        self.provided = replace(provided, identity=identity, code=None)
        self.implementation_id = identity.implementation_id
        if self.identity is not None:
            self.identity = identity
        self.notes.append(
            f"the code of {provided.name} changed during the run (a function's code or a "
            "method of its class was replaced in the calling process): the workers "
            "forked after that ran other code, so the run's id is a one-off"
        )

    def kill_lane(self, lane: _Lane) -> None:
        if lane.worker is not None:
            lane.worker.kill()
            lane.worker = None
            self.end_strays()
        lane.loading = False
        lane.reported_late = False

    def stop(self) -> None:
        """End every worker: ask them all to quit first, then make sure they are gone."""
        for lane in self.lanes:
            if lane.worker is not None:
                lane.worker.ask_to_quit()
        for lane in self.lanes:
            if lane.worker is not None:
                lane.worker.close()
                lane.worker = None

    def kill(self) -> None:
        for lane in self.lanes:
            self.kill_lane(lane)

    def requeue(self, lane: _Lane) -> None:
        """Put the lane's unanswered cases back at the front of the queue, in order:
        each was handed over, so each goes to a fresh worker with its first clock."""
        for flight in lane.in_flight:
            self.retry_later(flight.item, "its worker was lost before answering it")
        self.pending.extendleft(reversed([flight.item for flight in lane.in_flight]))
        lane.in_flight.clear()

    def run(self, planned: list[Planned]) -> None:
        if not planned:
            return
        try:
            self.run_phases(planned)
        finally:
            note = self.restarts.note()
            if note is not None:
                self.notes.append(note)

    def run_phases(self, planned: list[Planned]) -> None:
        """The parallel phase, the serial phase of the timed cases, the cases alone."""
        alone = [item for item in planned if item.alone]
        timed = [item for item in planned if item.timed and not item.alone]
        planned = [item for item in planned if not item.alone and not item.timed]
        if planned:
            self.pending = deque(planned)
            count = min(resolve_jobs(self.options.jobs), len(planned))
            self.lanes = [_Lane(index) for index in range(count)]
            self.execute()
        if timed and not self.finished and not self.stopped:
            # The serial phase: a case with a time bound runs with no other in flight,
            # on one lane (a live worker of the parallel phase is kept, the others are
            # let go), so that no other case's work is in its measured time.
            keep = next((lane for lane in self.lanes if lane.worker is not None), None)
            for lane in self.lanes:
                if lane is not keep:
                    self.kill_lane(lane)
            self.lanes = [keep if keep is not None else _Lane(0)]
            self.pending.extend(timed)
            self.execute()
        elif timed and not self.finished:
            self.pending.extend(timed)
        if self.finished:
            for item in timed:
                if item.case.position not in self.results:
                    self.record(errored(item.case, self.unloaded_reason(), fail_class="not_run"))
        if self.stopped and self.pending:
            self.leave_out(sorted(self.pending, key=lambda item: item.case.position))
            self.pending.clear()
        if not alone:
            return
        from cer.engine.python.alone import AloneCases  # only for cases that run alone

        alone_cases = AloneCases(self, self.imports)
        for item in alone:
            self.check_cancel()
            if self.stopped:
                self.leave_out([item])
                continue
            if self.finished:  # the implementation could not be loaded
                self.record(errored(item.case, self.unloaded_reason(), fail_class="not_run"))
                continue
            if self.provided is not None and asks_memory(item.case.expect):
                self.record(errored(item.case, PROVIDED_MEMORY, fail_class="unverifiable"))
                continue
            worker = self.new_worker()
            try:
                alone_cases.run_alone(worker, item)
            finally:
                worker.kill()

    def execute(self) -> None:
        """Keep every lane busy until each case has a result."""
        pending, lanes = self.pending, self.lanes
        while not self.finished and (
            (pending and not self.stopped) or any(lane.in_flight for lane in lanes)
        ):
            self.check_cancel()
            for lane in lanes:
                if lane.worker is None and not lane.retired:
                    self.revive(lane)
                if self.finished:
                    return
            if all(lane.retired for lane in lanes):
                self.give_up()
                return
            for lane in lanes:
                if lane.worker is not None and not lane.loading:
                    self.fill(lane)
            self.wait(lanes)
            now = time.monotonic()
            for lane in lanes:
                if lane.worker is not None:
                    self.check_deadlines(lane, now)

    def revive(self, lane: _Lane) -> None:
        """Start a worker for a lane that has none, unless there is nothing left for it
        to do, or it still waits before a restart (:meth:`schedule_restart`)."""
        if (not self.pending or self.stopped) and not lane.in_flight:
            return
        if time.monotonic() < lane.revive_at:
            return
        try:
            self.start_lane(lane)
        except WorkerLost as lost:
            self.load_failed(lane, None, lost.description)

    def give_up(self) -> None:
        """Every lane was retired (each of its workers could not load the
        implementation again while others ran): the remaining cases are not run."""
        for lane in self.lanes:
            self.requeue(lane)
        while self.pending:
            item = self.pending.popleft()
            self.retried.pop(item.case.position, None)  # not handed over again: not run
            self.record(
                errored(
                    item.case,
                    "not run: no worker could load the implementation again",
                    fail_class="not_run",
                )
            )

    def schedule_restart(self, lane: _Lane) -> None:
        """The lane lost its worker: the next one starts after the wait the losses in
        a row call for (none after the first), without holding up the other lanes."""
        lane.was_lost = True
        in_a_row = max(lane.losses, lane.failed_loads)
        lane.revive_at = time.monotonic() + self.restarts.take_delay(in_a_row)

    def fill(self, lane: _Lane) -> None:
        """Hand the lane's worker the next case from the shared queue, when it has none.

        One case at a time: the worker holds no other case's input, a result can only
        be for the case in flight, and the time from handing it over to its answer is
        that case's own (``elapsed_ms``), measured here on the supervisor's clock.
        """
        assert lane.worker is not None
        if not self.pending or lane.in_flight or lane.expecting_exit or self.stopped:
            return
        lost = self.hand_over(lane)
        if lost is not None:
            self.salvage(lane, lost.description)

    def hand_next(self, lane: _Lane) -> None:
        """Hand the lane's worker its next case as soon as it answered the one in
        flight, before that answer is decoded and judged, so that the worker runs the
        next case while the supervisor judges the last one.

        Still one case at a time: the worker answered, and will not exit (no anomaly,
        in time). A message read before this hand-over cannot answer the new case (see
        :meth:`answer`). When the send fails, the case goes back to the queue and the
        loss is handled where it is seen (:meth:`fill`, or the worker's end).
        """
        if (
            lane.worker is None
            or not self.pending
            or lane.in_flight
            or lane.expecting_exit
            or lane.loading
            or self.finished
            or self.stopped
            or self.one_failure_from_stopping()
            or (self.cancel is not None and self.cancel.is_set())
        ):
            return
        self.hand_over(lane)

    def unloaded_reason(self) -> str:
        """The reason of a case left unrun because the implementation could not be
        loaded: ``not run: <cause>``, as the cases run beside it say, so that no
        baseline entry takes it for the failure it lists."""
        cause = self.notes[-1] if self.notes else "the implementation could not be loaded"
        return f"not run: {cause}"

    def one_failure_from_stopping(self) -> bool:
        """Whether the answer about to be judged could stop the run (``--max-fail``):
        then the next case waits for the verdict, so that no case is handed out after
        the last failure allowed."""
        limit = self.options.max_fail
        return limit is not None and self.failures + 1 >= limit

    def hand_over(self, lane: _Lane) -> WorkerLost | None:
        """Send the first case of the queue to the lane's worker under a fresh id; when
        the send fails, the case goes back to the front of the queue and the loss is
        returned."""
        worker, pending = lane.worker, self.pending
        assert worker is not None
        if not self.may_take(lane, pending[0]):
            return None
        item = pending.popleft()
        seq = case_id()
        body = self.body_of(item)
        handed_over = time.monotonic()
        lane.handed += 1
        try:
            worker.send_case(seq, body)
        except WorkerLost as lost:
            # The supervisor saw the case not taken whole: its clock has not started.
            pending.appendleft(item)
            self.retry_later(item, "its worker did not take it whole (it stopped reading)")
            return lost
        clock = self._first_clock.setdefault(item.case.position, handed_over)
        lane.in_flight.append(_Flight(seq, item, handed_over, clock))
        return None

    def may_take(self, lane: _Lane, item: Planned) -> bool:
        """Whether the lane's worker may be handed ``item``. A case handed over before
        goes only to a fresh worker, one the supervisor started since, which the
        implementation's side cannot have prepared an answer in. When no fresh worker
        is on its way, this lane's is ended, to start fresh."""
        if item.case.position not in self.retried or lane.handed == 0:
            return True
        coming = any(
            other.handed == 0 or (other.worker is None and not other.retired)
            for other in self.lanes
            if other is not lane
        )
        if not coming and not lane.in_flight:
            self.kill_lane(lane)
        return False

    def retry_later(self, item: Planned, why: str) -> None:
        """``item`` goes back to the queue after a hand-over: its report will say it
        was handed over again, and why."""
        self.retried.setdefault(item.case.position, why)

    def body_of(self, item: Planned) -> bytes:
        """The encoded case message of ``item``: the one encoded ahead, when it is."""
        encoded = self._encoded
        if encoded is not None and encoded[0] is item:
            self._encoded = None
            return encoded[1]
        return encode_case(item)

    def encode_ahead(self) -> None:
        """Encode the case the queue hands out next, so that handing it over right after
        an answer (:meth:`hand_next`) costs only the write. Only the supervisor holds
        it: a worker still gets a case's input when the case is handed over."""
        pending = self.pending
        if pending and (self._encoded is None or self._encoded[0] is not pending[0]):
            self._encoded = (pending[0], encode_case(pending[0]))

    def wait(self, lanes: list[_Lane]) -> None:
        """Wait for any worker to speak (or a short while), then handle every complete
        message, lane by lane."""
        channels = {lane.worker.fileno(): lane for lane in lanes if lane.worker is not None}
        if not channels:
            # Every lane waits before a restart: sleep until the first may start.
            waits = [lane.revive_at for lane in lanes if not lane.retired]
            left = min(waits, default=0.0) - time.monotonic()
            if left > 0:
                time.sleep(min(left, POLL))
            return
        deaths: dict[int, _Lane] = {}
        for lane in lanes:
            death = lane.worker.death_fd() if lane.worker is not None else None
            if death is not None:
                deaths[death] = lane
        ready, _, _ = select.select([*channels, *deaths], [], [], POLL)
        now = time.monotonic()
        for fd in ready:
            if fd in deaths:
                continue
            lane = channels[fd]
            worker = lane.worker
            if worker is None:
                continue
            try:
                worker.read_available()
            except WorkerLost as lost:
                self.drain(lane, now)
                if lane.worker is worker:
                    self.lost(lane, lost.description, ended=lost.ended)
                continue
            self.drain(lane, now)
        for fd in ready:
            # The worker process ended. What it wrote before it ended is read first;
            # the supervisor never waits for the channel's end of file, which a process
            # the worker left behind may hold open.
            dead = deaths.get(fd)
            if dead is None or dead.worker is None or dead.worker.death_fd() != fd:
                continue
            lane, worker = dead, dead.worker
            try:
                worker.read_remaining()
            except WorkerLost as lost:
                self.drain(lane, now)
                if lane.worker is worker:
                    self.lost(lane, lost.description, ended=lost.ended)
                continue
            self.drain(lane, now)
            if lane.worker is worker:
                self.lost(lane, worker.exit_description(), ended=True)

    def salvage(self, lane: _Lane, description: str) -> None:
        """Sending to the lane's worker failed: it has gone. What it sent before it went
        (a result, then its exit after a case that changed its state) is handled first,
        so that no answered case is charged with the loss."""
        worker = lane.worker
        deadline = time.monotonic() + 2.0
        while lane.worker is worker and worker is not None and time.monotonic() < deadline:
            ready, _, _ = select.select([worker.fileno()], [], [], POLL)
            if not ready:
                continue
            try:
                worker.read_available()
            except WorkerLost as lost:
                description = lost.description
                break
            finally:
                self.drain(lane, time.monotonic())
        if lane.worker is worker:
            self.drain(lane, time.monotonic())
        if lane.worker is worker:
            self.lost(lane, description)

    def drain(self, lane: _Lane, now: float) -> None:
        """Handle the messages of the lane's worker that have arrived whole; ``now`` is
        when they were read."""
        while lane.worker is not None:
            worker = lane.worker
            try:
                message = worker.next_message()
            except WorkerLost as lost:
                self.lost(lane, lost.description)
                return
            if message is None:
                return
            if lane.loading:
                self.loaded(lane, message)
            else:
                self.answer(lane, message, now)
            if self.finished:
                return

    def loaded(self, lane: _Lane, message: Message) -> None:
        """The lane's worker answered the load request."""
        body = message.body
        if body.get("op") != "loaded":
            self.load_failed(lane, None, "the worker answered the load request with something else")
            return
        if not body.get("ok"):
            self.load_failed(lane, message, "")
            return
        lane.loading = False
        lane.failed_loads = 0
        if lane.restart_began:
            self.restarts.started(time.monotonic() - lane.restart_began)
            lane.restart_began = 0.0
        # The worker lists the files after importing the implementation: its list is
        # data, checked and hashed here (see cer.engine.identity).
        identity = self.imports.identify(body.get("files"))
        if not self.announced:
            self.imports.first_import(identity)
        elif not identity.known:
            self.implementation_id = identity.implementation_id  # it can no longer say
        elif identity.implementation_id != self.import_id and known_id(self.implementation_id):
            self.note_once(
                "the implementation's source changed during the run: a worker started "
                f"later imported {identity.implementation_id}, so results may mix both "
                "versions"
            )

    def load_failed(self, lane: _Lane, message: Message | None, failure: str) -> None:
        """The lane's worker could not load the implementation.

        Before any worker loaded it, that decides the run: every case is errored (as
        with a single worker). Later, while other workers still run, only this lane
        stops; when none is left, the remaining cases are errored.
        """
        self.kill_lane(lane)
        if lane.restart_began:
            self.restarts.start_failed(time.monotonic() - lane.restart_began)
            lane.restart_began = 0.0
        load_limit = self.load_timeout()
        allowed = self.restarts.allowance_left(load_limit)
        others = [
            other
            for other in self.lanes
            if other is not lane and not other.retired and other.worker is not None
        ]
        body = message.body if message is not None else {}
        if self.announced and not others and not allowed:
            self.note_once(
                "restarted workers were not tried again: those that could not load the "
                f"implementation took {self.restarts.failed_time:.2f} s in this run, the "
                f"{self.restarts.start_allowance(load_limit):g} s they may take"
            )
        if self.announced and not others and allowed and lane.failed_loads + 1 < START_ATTEMPTS:
            # A restarted worker could not load the implementation it loaded before:
            # tried again, so that no case after it is left out for one failed start.
            lane.failed_loads += 1
            self.requeue(lane)
            reason = str(body.get("reason") or failure or "it could not be loaded")
            self.note_once(f"a worker could not load the implementation again: {reason}")
            self.schedule_restart(lane)
            return
        if self.announced and others:
            lane.retired = True
            self.requeue(lane)
            reason = str(body.get("reason") or failure or "it could not be loaded")
            self.note_once(f"a worker could not load the implementation again: {reason}")
            return
        items: list[Planned] = []
        for each in self.lanes:
            items.extend(flight.item for flight in each.in_flight)
            each.in_flight.clear()
            if each is not lane:
                self.kill_lane(each)
        items.extend(self.pending)
        self.pending.clear()
        items.sort(key=lambda item: item.case.position)
        self.restarts.gave_up = self.announced  # a restarted worker, not the first
        self.finished = True
        self.imports.fail_import(items, message, failure)

    def answer(self, lane: _Lane, message: Message, now: float) -> None:
        """A message from a worker that runs cases.

        The worker is on the implementation's side: what it sends is data. A result is
        accepted only for the case in flight (it names the case's unguessable id), once;
        anything else ends the worker and errors the case in flight. The time and the
        timeout are the supervisor's own: from handing the case over to reading its
        answer, on this process's clock.
        """
        body = message.body
        op = body.get("op")
        in_flight = lane.in_flight
        if (
            op != "result"
            or not in_flight
            or body.get("seq") != in_flight[0].seq
            # Read before the case was handed over (a case handed over while earlier
            # messages of the same read were handled): it cannot be its answer.
            or now <= in_flight[0].sent_at
        ):
            what = f"a {op!r} message" if type(op) is str else "a message"
            self.lost(
                lane,
                f"the worker sent {what} that answers no case in flight (it was replaced)",
                expected=False,
            )
            return
        flight = in_flight.popleft()
        late = lane.reported_late
        lane.reported_late = False
        timeout = self.options.timeout
        elapsed_ms = (now - flight.clock) * 1000.0
        how = body.get("exit")
        if isinstance(how, dict) and how.get("how") == "unstarted" and not late:
            self.restart_case(flight.item)
            # Its worker says it never started the case: the case goes to a fresh
            # worker, never again to this one, which may hold an answer ready.
            self.kill_lane(lane)
            self.requeue(lane)
            return
        # cer's own limits are checked before the next case goes out, so that it never
        # starts while a limit this one lowered holds.
        self.limits.after_case()
        if not late and elapsed_ms <= timeout * 1000.0 and not body.get("anomaly"):
            # The worker answered in time and stays: it gets its next case before this
            # answer is decoded and judged.
            self.hand_next(lane)
        lane.losses = 0
        outcome = outcome_from_worker(
            body, message.raw, timeout, self.options.capture_limit, elapsed_ms
        )
        self.imports.grow(outcome.loaded_files)
        if late or elapsed_ms > timeout * 1000.0:
            # Past the supervisor's own deadline: whatever the worker says now, the case
            # did not answer in time.
            outcome = Outcome(
                "timed_out",
                detail=f"timed out after {timeout:g} s",
                elapsed_ms=timeout * 1000.0,
                stdout=outcome.stdout,
                stderr=outcome.stderr,
                # The stack the case's process dumped when the worker stopped it: data
                # from the implementation's side, shown as its stack, never judged.
                traceback=outcome.traceback if outcome.kind == "timed_out" else None,
            )
        elif outcome.kind == "timed_out":
            outcome = Outcome(
                "lost",
                detail=f"the worker reported a timeout after {elapsed_ms:.0f} ms, before "
                f"the {timeout:g} s deadline: the runner did not see one",
                elapsed_ms=elapsed_ms,
            )
        self.record(judge(flight.item.case, outcome), limits_checked=True)
        if body.get("anomaly"):
            lane.expecting_exit = True
            lane.exit_deadline = time.monotonic() + REPORT_GRACE
            self.requeue(lane)
        self.encode_ahead()

    def restart_case(self, item: Planned) -> None:
        """The case's process ended before it started the case (something disturbed
        it): nothing of the implementation ran, so the case is sent again."""
        attempts = self._attempts.get(item.case.position, 0) + 1
        self._attempts[item.case.position] = attempts
        self.retry_later(item, "its worker said it never started it")
        if attempts >= START_ATTEMPTS:
            self.record(
                errored(
                    item.case,
                    f"the runner could not start this case: its process was disturbed "
                    f"before it began, {attempts} times",
                    fail_class="not_run",
                )
            )
            return
        self.pending.appendleft(item)

    def lost(
        self,
        lane: _Lane,
        description: str,
        *,
        expected: bool | None = None,
        ended: bool = False,
    ) -> None:
        """The lane's worker vanished or broke its channel (``ended``: the supervisor
        saw the worker process end)."""
        if lane.loading:
            self.load_failed(lane, None, description)
            return
        expecting = lane.expecting_exit if expected is None else expected
        charged = bool(lane.in_flight) and not expecting
        self.handle_loss(lane, description, expecting, ended)
        if not expecting:
            lane.losses += 1
        self.kill_lane(lane)
        self.requeue(lane)
        if not expecting and not charged:
            self.not_taken(description)
        if expecting:
            return
        self.schedule_restart(lane)

    def not_taken(self, description: str) -> None:
        """A worker was lost while it held no case: the case the queue hands out next
        counts an attempt to start it, so that workers lost before they take any case
        cannot keep the run going for ever. After :data:`START_ATTEMPTS` that case is
        errored with the cause, and the next case gets its own tries."""
        if not self.pending:
            return
        item = self.pending[0]
        attempts = self._attempts.get(item.case.position, 0) + 1
        self._attempts[item.case.position] = attempts
        if attempts < START_ATTEMPTS:
            return
        self.pending.popleft()
        self.record(
            errored(
                item.case,
                "the runner could not start this case: the worker process was lost "
                f"before it took the case, {attempts} times (the last: {description})",
                fail_class="lost",
            )
        )

    def check_deadlines(self, lane: _Lane, now: float) -> None:
        """The load timeout and the case's deadline.

        The deadline is fixed when the case is handed over (its timeout after that) and
        nothing the worker sends moves it. With ``fork`` the worker kills the case's
        process at its own deadline and reports it; it gets a short grace to do so, so
        that it can be kept. The case has timed out either way.
        """
        if lane.loading:
            if now > lane.load_deadline:
                limit = self.load_timeout()
                self.load_failed(
                    lane, None, f"importing the implementation timed out after {limit:g} s"
                )
            return
        if not lane.in_flight:
            if lane.expecting_exit and now > lane.exit_deadline:
                # It said it would exit and did not: it gets no case again, so without
                # this the run would wait for it for ever.
                self.kill_lane(lane)
            return
        deadline = lane.in_flight[0].clock + self.options.timeout
        if now <= deadline:
            return
        if self.options.isolation == "fork" and now <= deadline + REPORT_GRACE:
            lane.reported_late = True
            return
        self.handle_timeout(lane)
        self.kill_lane(lane)
        lane.losses = 0
        self.requeue(lane)
        self.schedule_restart(lane)

    def handle_loss(self, lane: _Lane, description: str, expected: bool, ended: bool) -> None:
        """The worker vanished: the case it was running is errored (or crashed)."""
        if expected or not lane.in_flight:
            return
        flight = lane.in_flight.popleft()
        worker = lane.worker
        if self.options.isolation == "none" and ended:
            # The case ran in the worker, a process the supervisor started and saw end:
            # a crash the runner observed itself.
            outcome = Outcome(
                "crashed",
                detail=f"the case ended the worker process: {description.split(': ', 1)[-1]}",
                elapsed_ms=(time.monotonic() - flight.clock) * 1000.0,
                seen=True,
                fail_class=self._ending(worker),
            )
            self.record(judge(flight.item.case, outcome))
            return
        tail = worker.stderr_tail() if worker is not None else ""
        self.record(
            errored(
                flight.item.case,
                f"the runner lost this case: {description}",
                fail_class="lost",
                stderr=tail,
            )
        )

    @staticmethod
    def _ending(worker: WorkerProcess | None) -> FailClass | None:
        """``exited`` when the supervisor reaped the worker with an exit status (not
        killed by a signal): a case that ended the worker so exited, not crashed."""
        code = None if worker is None else worker.reap(0.0)
        return "exited" if code is not None and code >= 0 else None

    def handle_timeout(self, lane: _Lane) -> None:
        item = lane.in_flight.popleft().item
        lane.reported_late = False
        timeout = self.options.timeout
        outcome = Outcome(
            "timed_out", detail=f"timed out after {timeout:g} s", elapsed_ms=timeout * 1000.0
        )
        self.record(judge(item.case, outcome))

    def live_pids(self) -> set[int]:
        mine = {lane.worker.process.pid for lane in self.lanes if lane.worker is not None}
        return mine | super().live_pids()
