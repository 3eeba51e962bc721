"""The supervisor: it plans a run, drives the implementation through a backend (a worker
process for a Python implementation, a harness or per-case process for a command), and
hands every outcome to :mod:`cer.judge.verdict`. Nothing here imports the implementation."""
