"""Eval suites: an ``evals.toml`` read, validated and cached.

:mod:`cer.suite.loader` reads a file into a frozen :class:`~cer.model.Suite`,
:mod:`.layout` finds the lines of its cases, :mod:`.cache` keeps validated suites,
:mod:`.fixtures` resolves ``fixture://`` names and :mod:`.selection` picks the cases a
run executes. Users import :func:`~cer.suite.loader.load_suite` from :mod:`cer`.
"""
