"""The supervisor's C allocator, told to give large buffers back when they are freed.

A case may return tens of megabytes, and the supervisor reads each answer into a
buffer of that size, decodes it and keeps a bounded copy (cer.text.safetext). glibc's
allocator serves such buffers from their own memory maps and returns them to the
system when they are freed, but after the first such return it raises that threshold
(to 32 MiB) so that later buffers of the same size come from the heap; there, answers
that arrive while an earlier one is still being judged leave holes behind, and the
supervisor's memory grew with the number of huge answers
(tests/hostile/test_supervisor_survives.py). Fixing the threshold at 1 MiB keeps every
buffer that large in a map of its own, returned whole when it is freed.
"""

from __future__ import annotations

import sys

__all__ = ["LARGE", "free_large_buffers_promptly"]

LARGE = 1 << 20
"""Buffers of this many bytes or more get a memory map of their own."""

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter

_done = False


def free_large_buffers_promptly() -> bool:
    """Fix the C allocator's threshold for memory maps at :data:`LARGE`, once per
    process; whether the allocator took it (only glibc's does)."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    _done = bool(mallopt(_M_MMAP_THRESHOLD, LARGE) == 1)
    return _done
