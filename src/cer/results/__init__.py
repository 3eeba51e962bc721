"""A run's results once the engine has made them: as documents (``--format json``,
:mod:`cer.results.serialize`; ``--format jsonl``, :mod:`.jsonlines`), merged from
shards (:mod:`.merge`), checked against a baseline of known failures (:mod:`.baseline`)
and stated as the verdict every surface shows (:mod:`.conformance`)."""
