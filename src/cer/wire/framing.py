"""Length-prefixed frames on raw file descriptors, shared by supervisor and worker.

A frame is a 4-byte big-endian length, one kind byte and the payload. Reading is
defensive: a length over the limit or a short read is an error, never a guess.
"""

from __future__ import annotations

import os
import struct
from typing import Any

HEADER = struct.Struct(">IB")
"""A frame's header: the payload's length and its kind."""
_HEADER = HEADER
HEADER_SIZE = HEADER.size
MAX_FRAME = 256 * 1024 * 1024

KIND_JSON = 1
"""A control message encoded with :mod:`cer.wire.plaindata`."""
KIND_RAW = 2
"""Bytes passed through untouched (a child's result payload)."""
KIND_CASE = 3
"""One case to run: from the supervisor, an 8-byte sequence number and the encoded
case; from the worker to a case's process, that process's token and the encoded case.
The worker never decodes a case it hands to a process of its own."""


class FrameError(Exception):
    """The byte stream does not hold a well-formed frame.

    ``frames`` holds the well-formed frames that came before the bad one (from
    :func:`split_frames`): what arrived intact is still what it is.
    """

    def __init__(self, message: str, frames: list[tuple[int, bytes]] | None = None) -> None:
        super().__init__(message)
        self.frames: list[tuple[int, bytes]] = frames or []


# What the functions below use is bound when they are defined, so that rebinding a
# name (``struct.pack``, ``os.write``, this module's globals) in the worker while a case
# runs in it cannot change a frame.


def pack(kind: int, payload: bytes, _pack: Any = _HEADER.pack, _len: Any = len) -> bytes:
    header: bytes = _pack(_len(payload), kind)
    return header + payload


def write_all(fd: int, data: bytes, _write: Any = os.write, _view: Any = memoryview) -> None:
    """Write every byte of ``data`` to ``fd`` (pipes may accept partial writes)."""
    view = _view(data)
    while view:
        written = _write(fd, view)
        view = view[written:]


def read_exact(fd: int, size: int) -> bytes:
    """Read exactly ``size`` bytes; EOFError if the stream ends first."""
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError("stream ended inside a frame" if chunks else "stream ended")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> tuple[int, bytes]:
    """Block until one whole frame arrives on ``fd``."""
    length, kind = _HEADER.unpack(read_exact(fd, HEADER_SIZE))
    if length > MAX_FRAME:
        raise FrameError(f"frame of {length} bytes exceeds the limit")
    return kind, read_exact(fd, length) if length else b""


def split_frames(buffer: bytearray) -> list[tuple[int, bytes]]:
    """Remove and return every complete frame at the start of ``buffer``.

    A malformed frame raises FrameError carrying the complete frames before it, which
    are removed from ``buffer`` too.
    """
    frames: list[tuple[int, bytes]] = []
    offset = 0
    while len(buffer) - offset >= HEADER_SIZE:
        length, kind = _HEADER.unpack_from(buffer, offset)
        if length > MAX_FRAME:
            del buffer[:offset]
            raise FrameError(f"frame of {length} bytes exceeds the limit", frames)
        end = offset + HEADER_SIZE + length
        if len(buffer) < end:
            break
        frames.append((kind, bytes(buffer[offset + HEADER_SIZE : end])))
        offset = end
    del buffer[:offset]
    return frames
