"""The supervisor's allocator setting (cer.engine.allocator)."""

from __future__ import annotations

import platform
import sys

import pytest

from cer.engine.allocator import free_large_buffers_promptly


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="only glibc's allocator takes the setting",
)
def test_glibc_takes_the_fixed_threshold_and_a_second_call_is_free() -> None:
    assert free_large_buffers_promptly() is True
    assert free_large_buffers_promptly() is True
