"""Run history: every run recorded in an embedded SQLite database, and read back.

:mod:`cer.history.database` is the open database (:class:`~cer.history.database.History`),
which records runs and answers the questions asked of them, both through one connection
(:mod:`.access`); :mod:`.schema` is the schema it expects, :mod:`.records` the frozen
values it gives back, :mod:`.budget` what it stores of a run's evidence, :mod:`.gaps` the
runs it could not record. Users import ``History`` and its errors from :mod:`cer`.
"""
