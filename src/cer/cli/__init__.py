"""The ``cer`` command line: a thin shell over the core (parsing, the commands, the
console output)."""
