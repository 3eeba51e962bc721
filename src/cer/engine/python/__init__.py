"""The backend of a Python implementation (``--impl MODULE:ATTR``, or an object given
as such): a pool of worker processes that import it.

The supervisor never imports the implementation. :class:`~cer.engine.python.pool.WorkerPool`
(the :class:`~cer.engine.execution.Execution` of the ``python`` kind) hands the cases to
worker processes (:mod:`cer.engine.python.workerproc`), runs the cases that must be
observed alone in a worker of their own (:mod:`cer.engine.python.alone`), and makes the
run's id from what the workers import (:mod:`cer.engine.python.imports`) or, for an
object given as the implementation, from its code (:mod:`cer.engine.python.provided`).
What only this backend keeps (the warm workers, the import's identity, how memory was
measured) is on :class:`~cer.engine.python.state.PythonExecution`. In the engine, the
runner (which builds the pool) and :mod:`cer.engine.side_by_side` (the distribution an
implementation comes from) import this package, and it imports neither; outside the
engine, the front ends import only :class:`~cer.engine.python.workerproc.WarmWorkers`.
"""
