"""cer: verify implementations against Commons Format eval suites."""

__version__ = "0.1.0"
