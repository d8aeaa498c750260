"""`serve.memory`: once an `Engine` exists, a big tensor comes from malloc's heap, where a freed one is reused.

Run in fresh Python processes, one with an engine and one without: the settings are per process, and the pytest
process has made engines before. What glibc did is read from its `mallinfo2` (glibc 2.33+): `hblks`, the blocks
it serves by a fresh mapping of their own (unmapped when freed, so the next one faults every page again).
"""
from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import pytest

from dllm_viz.serve import memory

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
SCRIPT = textwrap.dedent("""
    import ctypes, sys
    import torch
    from dllm_viz.models.embedded import EmbeddedConfig, EmbeddedDenoiser
    from dllm_viz.serve.engine import Engine

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                     "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    if sys.argv[1] == "engine":
        cfg = EmbeddedConfig(vocab_size=40, mask_token_id=0, pad_token_id=1, eos_token_id=2, d_model=16, n_layers=1,
                             n_heads=2, d_ff=32, max_length=32)
        Engine(EmbeddedDenoiser(cfg), max_batch=2).close()
    mapped = []
    for rows in (1024, 640, 1024):  # the logits of a step, (M, V): 64, 40 and 64 MB
        before = libc.mallinfo2().hblks
        logits = torch.empty(rows, 16384).fill_(1.0)
        mapped.append(libc.mallinfo2().hblks - before)
        del logits
    print(*mapped)
""")


def _mapped(mode: str) -> list[int]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120, check=True)
    return [int(n) for n in done.stdout.split()]


@pytest.mark.skipif(not GLIBC or platform.libc_ver()[1] < "2.33", reason="glibc's mallopt and mallinfo2")
def test_after_an_engine_starts_a_step_s_big_tensors_come_from_the_heap() -> None:
    assert _mapped("plain") == [1, 1, 1]  # glibc's default: a mapping of its own each, faulted afresh
    assert _mapped("engine") == [0, 0, 0]  # from the heap: a freed block is there for the next


def test_keep_freed_memory_is_applied_once_and_says_whether_it_took() -> None:
    first = memory.keep_freed_memory()
    assert memory.keep_freed_memory() is first
    assert first is GLIBC
