"""A serving process keeps the memory it frees for the next step: glibc's malloc set as serving needs it.

A batched step allocates a few tensors of tens of MB: the logits at every masked position `(M, V)` and
what the step derives from them (1,024 positions of a 16,384-token vocabulary are 64 MB each). glibc serves
a block over its largest dynamic mmap threshold (32 MB) with a fresh mapping and unmaps it when freed, and a
thread other than the main one (the engine's worker) allocates in its own arena, whose heaps hold at most
64 MB: so every such step writes to fresh pages, 16,000 page faults a tensor. Measured on this machine, one
thread: filling a fresh 64 MB tensor 41 ms, a reused one 3 ms; 16 requests in one batched decode
160,000 page faults and 0.3 s of system time out of 2.8 s, one after another none. That is a tax on batching
alone: a lone request's tensors are small enough for glibc to reuse.

`keep_freed_memory` sets glibc's own knobs (`mallopt`) the way a caching allocator behaves, as serving
stacks get by preloading jemalloc or tcmalloc: blocks up to `MMAP_THRESHOLD` from the heap, the heap
returned to the system only past `TRIM_THRESHOLD` free, one arena for the threads (the worker's blocks then
come from the main heap too; Python threads allocate under the GIL anyway). The memory a step frees stays in
the process (its peak stays resident) and the next step reuses it: the 16 requests' batched decode above
13 page faults, the engine 5. Best effort: glibc fixes its arena count when a second thread first
allocates, so a worker started after other threads allocated keeps an arena of its own, where a block of
64 MB or more is still mapped afresh. `Engine` calls it once per process; where malloc is not glibc's it
does nothing.
"""
from __future__ import annotations

import ctypes
import platform
import threading

MMAP_THRESHOLD = 256 << 20  # blocks up to this size come from the heap (glibc's default: up to 32 MB, adaptive)
TRIM_THRESHOLD = 1 << 30  # free memory kept at the top of the heap before it is returned to the system
# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8

_lock = threading.Lock()
_applied: bool | None = None  # None: not tried yet


def keep_freed_memory() -> bool:
    """Set glibc's malloc to keep freed memory for reuse (module docstring), once per process.

    Returns whether the settings are in place: False where the C library is not glibc or refused one.
    """
    global _applied
    with _lock:
        if _applied is None:
            _applied = _apply()
        return _applied


def _apply() -> bool:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    settings = ((_M_MMAP_THRESHOLD, MMAP_THRESHOLD), (_M_TRIM_THRESHOLD, TRIM_THRESHOLD), (_M_ARENA_MAX, 1))
    return all(mallopt(option, value) == 1 for option, value in settings)
