"""What a run of a Python implementation keeps beside the shared bookkeeping of
:class:`~cer.engine.execution.Execution`: the warm workers it may take, the
implementation given as an object, the identity of what the workers imported, how a
case's memory was measured. The pool (:mod:`cer.engine.python.pool`) and its helpers
(:mod:`cer.engine.python.imports`, :mod:`cer.engine.python.alone`) share it."""

from __future__ import annotations

from pathlib import Path

from cer.engine.execution import Execution, Setup
from cer.engine.identity import Identity
from cer.engine.options import search_paths
from cer.engine.python.provided import Provided
from cer.engine.python.workerproc import WarmWorkers


class PythonExecution(Execution):
    """A run's state while a Python implementation's cases are in the pool's hands.

    Built from the run's :class:`~cer.engine.execution.Setup`, the workers started ahead
    of time (``warm``, taken when the run needs a worker) and, for an implementation
    given as an object, its description (``provided``, see
    :func:`cer.engine.python.provided.describe`)."""

    def __init__(
        self,
        setup: Setup,
        *,
        warm: WarmWorkers | None = None,
        provided: Provided | None = None,
    ) -> None:
        super().__init__(setup)
        self.warm = warm
        self.provided = provided
        """The name and id of an implementation given as an object (see
        :mod:`cer.engine.python.provided`)."""
        if provided is not None:
            self.implementation_id = provided.identity.implementation_id
            self.notes.insert(0, provided.note)
        self.identity: Identity | None = None
        """What the run's id covers so far: the first import's files, grown by the files
        cases loaded while they ran (see :meth:`cer.engine.python.imports.Imports.grow`)."""
        self.import_id = ""
        """The id of the first worker's import, which a later worker's is compared to."""
        self.measured_by = ""
        """How the run measured a case's memory; empty when no case asked about memory."""

    def memory_method(self) -> str:
        return self.measured_by

    def source_files(self) -> tuple[str, ...]:
        """The files the supervisor checked as loaded, or those an object given as the
        implementation is made of, or, when the import failed, the module files the
        import looks for."""
        if self.identity is not None:
            return tuple(self.identity.files)
        if self.provided is not None:
            return tuple(self.provided.identity.files)
        return module_files(self.options.impl, search_paths(self.suite, self.options))

    def live_pids(self) -> set[int]:
        """The warm workers are kept (they are the next run's); a subclass adds its own."""
        return set(self.warm.pids()) if self.warm is not None else set()


def module_files(impl: str, roots: list[str]) -> tuple[str, ...]:
    """The files importing ``impl``'s module runs (its packages' ``__init__.py`` and the
    module), under each import root, as the supervisor finds them itself."""
    parts = impl.partition(":")[0].split(".")
    found: list[str] = []
    for root in roots:
        folder = Path(root)
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            candidates = [folder / part / "__init__.py"] + ([folder / f"{part}.py"] if last else [])
            found.extend(str(c) for c in candidates if c.is_file())
            folder = folder / part
    return tuple(dict.fromkeys(found))
