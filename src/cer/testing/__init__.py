"""The runner verified by the runner: the adapter its own self-suite (``evals.toml`` at
the repository's root) runs against."""
