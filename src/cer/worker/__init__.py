"""The implementation's side of the pipe: a fresh interpreter (``python -m cer.worker``)
that imports the implementation, runs its cases and answers the supervisor. It imports
only the wire formats and the sandbox, never the engine."""
