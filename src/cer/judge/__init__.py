"""Judging one case: the strict comparison of an observation against the case's
``expect`` (:mod:`cer.judge.compare`, over the values of :mod:`.equality`) and the
verdict made from what happened (:mod:`.verdict`, the only place a status is made)."""
