"""The review loop: propose draft cases for a module's constraints, run them, and move
the ones a person approves into the suite on the record.

:mod:`cer.review.derive` proposes drafts, :mod:`.drafts` keeps them in
``evals.drafts.toml``, :mod:`.observe` runs them and reads what the implementation did
as a proposed expectation, :mod:`.approve` moves a draft into the suite and
:mod:`.provenance` reads where a case came from. Nothing here judges a run.
"""
