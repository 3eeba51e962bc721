"""Implementations that are commands rather than Python objects.

``--impl-cmd`` starts the implementation as a long-lived *harness* process that speaks
the line-delimited JSON protocol of docs/protocol.md on its stdin and stdout: a
``start`` handshake, then one ``run`` request per case, each answered by exactly one
``result`` carrying the same sequence number. ``--impl-cmd-per-case`` starts one
process per case instead: the ``run`` request on stdin, the ``result`` on stdout.

Why this package is careful: a harness is foreign code that can crash, hang, print junk,
answer the wrong case or answer twice. None of that may ever turn into a pass. Values
travel with explicit type tags (so ``1``, ``1.0``, ``true`` and ``"1"`` stay
different), every message is checked strictly, every wait is bounded by a deadline
kept here (the harness's process group is SIGKILLed when it passes), and whatever goes
wrong is charged to the case that was running, with the evidence (the bad line, the
tail of stderr). Verdicts are still made only by :func:`cer.judge.verdict.judge`: it
builds :class:`~cer.judge.verdict.Outcome` values, and uses ``errored`` only for failures
of the runner's own machinery (the harness cannot be started or restarted).

The command is split like a shell splits words (``shlex.split``) and is never run
through a shell. It runs in the runner's working directory, so relative paths in the
command mean what they mean where ``cer`` was started; fixture paths in case inputs
are absolute.
"""
