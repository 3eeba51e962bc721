"""A command harness for examples/calc/calc_ref.py, speaking docs/protocol.md.

Run it the way the runner does:

    cer run examples/calc/evals.toml --impl-cmd 'python3 examples/harnesses/calc_harness.py'
    cer run examples/calc/evals.toml \
        --impl-cmd-per-case 'python3 examples/harnesses/calc_harness.py --per-case'

It uses only the standard library and never imports the runner: it is what a harness
in any language has to do. Read one JSON message per line on stdin, answer one JSON
message per line on stdout, keep everything else (logs, the module's own prints) on
stderr. Pass another module with ``--module PATH`` and ``--function NAME``.
"""

from __future__ import annotations

import base64
import datetime as dt
import importlib.util
import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any

PROTOCOL = 1
HERE = Path(__file__).resolve().parent
DEFAULT_MODULE = HERE.parent / "calc" / "calc_ref.py"

# The calculator's integers may have up to 10,000 digits; Python refuses to print ints
# past 4,300 digits unless told otherwise.
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)


def load(path: Path, name: str) -> Any:
    """Import the module at ``path`` (by path, not by name) and return ``name`` from it.

    The module's folder goes on the import path, so that it can import its siblings."""
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return getattr(module, name)


# ------------------------------------------------------------------ typed values


def decode(value: dict[str, Any]) -> Any:
    """A typed value from the runner as a Python value."""
    kind: str = value["type"]
    raw: Any = value.get("value")
    if kind == "string":
        return raw
    if kind == "integer":
        return int(raw)
    if kind == "float":
        return float(raw)  # "nan", "inf" and "-inf" included
    if kind == "bool":
        return raw
    if kind == "null":
        return None
    if kind == "array":
        return [decode(item) for item in raw]
    if kind == "table":
        return {key: decode(item) for key, item in raw.items()}
    if kind in ("datetime", "datetime-local"):
        return dt.datetime.fromisoformat(raw)
    if kind == "date-local":
        return dt.date.fromisoformat(raw)
    if kind == "time-local":
        return dt.time.fromisoformat(raw)
    if kind == "bytes":
        return base64.b64decode(raw)
    raise ValueError(f"unknown type {kind!r}")


def encode(value: Any) -> dict[str, Any]:
    """A Python value as a typed value for the runner (bool before int: True is an int)."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, int):
        return {"type": "integer", "value": str(value)}
    if isinstance(value, float):
        if math.isnan(value):
            return {"type": "float", "value": "nan"}
        if math.isinf(value):
            return {"type": "float", "value": "inf" if value > 0 else "-inf"}
        return {"type": "float", "value": repr(value)}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    if isinstance(value, list | tuple):
        return {"type": "array", "value": [encode(item) for item in value]}
    if isinstance(value, dict):
        return {"type": "table", "value": {str(k): encode(v) for k, v in value.items()}}
    if isinstance(value, dt.datetime):
        kind = "datetime" if value.tzinfo is not None else "datetime-local"
        return {"type": kind, "value": value.isoformat()}
    if isinstance(value, dt.date):
        return {"type": "date-local", "value": value.isoformat()}
    if isinstance(value, dt.time):
        return {"type": "time-local", "value": value.isoformat()}
    if isinstance(value, bytes):
        return {"type": "bytes", "value": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"cannot encode a {type(value).__name__}")


# ---------------------------------------------------------------------- cases


def run_case(function: Any, case: dict[str, Any]) -> dict[str, Any]:
    """Call ``function(**input)``; the result body: an observation or an error."""
    arguments = decode(case["input"])
    try:
        value = function(**arguments)
    except Exception as exc:
        return {
            "error": {
                "type": type(exc).__name__,
                "message": str(exc),
                "traceback": traceback.format_exc(),
            }
        }
    return {"observation": encode(value)}


def serve(function: Any, files: list[str], out: Any) -> None:
    """The long-lived protocol: start, then run requests until stop or end of input."""

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    for line in sys.stdin:
        request = json.loads(line)
        op = request.get("op")
        if op == "start":
            send(
                {
                    "op": "started",
                    "protocol": PROTOCOL,
                    "implementation": {
                        "name": "calc-python",
                        "version": "0.1.0",
                        "language": "python",
                        "files": files,
                    },
                }
            )
        elif op == "run":
            body = run_case(function, request["case"])
            send({"op": "result", "seq": request["seq"], **body})
        elif op == "stop":
            return


def main() -> int:
    args = sys.argv[1:]
    module, function_name = DEFAULT_MODULE, "evaluate"
    if "--module" in args:
        module = Path(args[args.index("--module") + 1]).resolve()
    if "--function" in args:
        function_name = args[args.index("--function") + 1]
    # The protocol owns stdout; anything the module prints goes to stderr instead.
    out = sys.stdout
    sys.stdout = sys.stderr
    function = load(module, function_name)
    if "--per-case" in args:
        request = json.loads(sys.stdin.read())
        # No start handshake here: each request offers the protocol version, and a
        # version this harness does not speak is refused, never guessed at.
        offered = request.get("protocol", PROTOCOL)
        if offered != PROTOCOL:
            refusal = {"op": "refused", "protocol": PROTOCOL, "reason": f"offered {offered!r}"}
            out.write(json.dumps(refusal) + "\n")
            out.flush()
            return 1
        body = run_case(function, request["case"])
        out.write(json.dumps(body) + "\n")
        out.flush()
        return 0
    serve(function, [str(module)], out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
