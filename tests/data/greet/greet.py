"""greet for the coverage tests: greets by name, rejects empty names, never trims."""


def greet(name: str) -> str:
    if not name:
        raise ValueError("empty name")
    return f"Hello, {name}!"
