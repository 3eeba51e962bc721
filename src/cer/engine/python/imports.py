"""The Python implementation as the run's workers import it, made the supervisor's
own finding: the run's id starts at the first import and grows by the files cases
loaded (checked and hashed by :mod:`cer.engine.identity`), and an import that fails
decides every case it leaves. Both ways the pool runs a case, on a lane of the pool
(:mod:`cer.engine.python.pool`) and in a worker of its own (:mod:`cer.engine.python.alone`), report
their workers' imports here."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cer.engine.identity import UNKNOWN, UNVERIFIED, Identity, Scope, extend, identify, scope_for
from cer.engine.options import search_paths
from cer.engine.plan import Planned
from cer.engine.python.provided import LOAD_NAME
from cer.engine.python.state import PythonExecution
from cer.engine.python.workerproc import Message
from cer.events import ImplementationFailed, ImplementationLoaded
from cer.judge.verdict import errored
from cer.wire.messages import LoadRequest

LOAD_TIMEOUT_MIN = 30.0
"""Importing an implementation may take longer than one case; this is its floor."""


def load_failure(impl: str, reason: str) -> str:
    """The run's one line for a Python implementation that could not be loaded (its
    import raised or timed out, or the attribute is missing): which kind of
    implementation failed, and how. Each of its cases is errored ``not run: <line>``."""
    return f"the Python implementation {impl} could not be loaded: {reason}"


def known_id(implementation_id: str) -> bool:
    """Whether an id names code (not a one-off ``…@unknown-…`` or ``…@unverified-…``)."""
    return not implementation_id.rpartition("@")[2].startswith((UNKNOWN, UNVERIFIED))


class Imports:
    """What the workers of ``execution`` say about importing its implementation, as
    the run's id and events: data checked here, never taken at its word."""

    def __init__(self, execution: PythonExecution) -> None:
        self.execution = execution
        self._scope: Scope | None = None

    def load_request(
        self, isolation: str, *, confine: bool | None = None, no_buffers: bool = False
    ) -> LoadRequest:
        """What a worker is asked to import: the implementation, under the run's
        sandbox, with its cases kept apart by ``isolation``. ``confine`` (a worker of
        its own for one case, :mod:`cer.engine.python.alone`) says whether new processes are
        forbidden before the import, and ``no_buffers`` whether pipes and sockets are
        too (where no cgroup counts their buffers)."""
        execution = self.execution
        options, policy = execution.options, execution.policy
        request = LoadRequest(
            op="load",
            # An object given as the implementation is found where the forked worker
            # was told to look (cer.engine.python.provided), under no name of the caller's.
            impl=LOAD_NAME if execution.provided is not None else options.impl,
            paths=search_paths(execution.suite, options),
            isolation=isolation,
            capture_limit=options.capture_limit,
            max_memory=options.max_memory,
            timeout=options.timeout,
            sandbox=policy.to_json() if policy is not None else None,
            sandbox_abi=execution.sandbox.abi,
        )
        if confine is not None:
            request["alone"] = True
            request["confine"] = confine
            if no_buffers:
                request["no_buffers"] = True
        return request

    def announce(self, body: dict[str, Any]) -> None:
        """The implementation was loaded by a worker: say so once."""
        execution = self.execution
        identity = self.identify(body.get("files"))
        if not execution.announced:
            self.first_import(identity)

    def identify(self, reported: object) -> Identity:
        """The identity of what a worker loaded, from the files it ``reported``
        (:func:`cer.engine.identity.identify`); for an implementation given as an
        object, the supervisor's own, from its code (:mod:`cer.engine.python.provided`): the
        worker imported nothing for it."""
        provided = self.execution.provided
        if provided is not None:
            return provided.identity
        return identify(self.execution.options.impl, reported, self.scope())

    def scope(self) -> Scope:
        """Where the implementation's code can come from, as the supervisor resolved
        it (computed once per run; see cer.engine.identity.scope_for)."""
        scope = self._scope
        if scope is None:
            execution = self.execution
            module = execution.options.impl.partition(":")[0]
            scope = scope_for(module, search_paths(execution.suite, execution.options))
            self._scope = scope
        return scope

    def first_import(self, identity: Identity) -> None:
        """The first worker loaded the implementation: the run's id starts here."""
        execution = self.execution
        if identity.problem is not None:
            execution.note_once(identity.problem)
        execution.identity, execution.import_id = identity, identity.implementation_id
        execution.implementation_id = identity.implementation_id
        execution.emit(ImplementationLoaded(identity.implementation_id, identity.files))

    def grow(self, reported: object) -> None:
        """Add the files a case reported it loaded while it ran to the run's id and to
        what watchers watch (cer.engine.identity.extend); the list is data, checked
        and hashed there. Once the id is a one-off, it stays one."""
        execution = self.execution
        if reported is None or execution.identity is None or execution.provided is not None:
            return
        grown = extend(execution.identity, execution.options.impl, reported, self.scope())
        if grown is execution.identity:
            return
        execution.identity = grown
        if grown.problem is not None:
            execution.note_once(grown.problem)
        if known_id(execution.implementation_id) or not grown.known:
            execution.implementation_id = grown.implementation_id
        execution.emit(ImplementationLoaded(execution.implementation_id, grown.files))

    def fail_import(
        self, planned: Iterable[Planned], message: Message | None, failure: str
    ) -> None:
        """The implementation could not be imported: the run notes the cause once
        (:func:`load_failure`, with the worker's reason, as data, or ``failure``) and
        every case of ``planned`` is errored ``not run: <cause>``."""
        execution = self.execution
        body = message.body if message is not None else {}
        reason = str(body.get("reason") or failure or "the implementation could not be loaded")
        trace = str(body.get("traceback") or "") or None
        output = str(body.get("output") or "")
        if message is not None and not execution.announced:
            execution.implementation_id = self.identify(body.get("files")).implementation_id
        execution.kill()
        # The cause once (the run's note, the event), each case only "not run" with it.
        note = load_failure(execution.options.impl, reason)
        execution.notes.append(note)
        execution.emit(ImplementationFailed(reason, trace or ""))
        for item in planned:
            execution.record(
                errored(
                    item.case,
                    f"not run: {note}",
                    fail_class="not_run",
                    traceback=trace,
                    stdout=output,
                )
            )
