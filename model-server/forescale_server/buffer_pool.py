"""A pool of pre-allocated batch buffers.

Steady traffic should allocate nothing per batch: buffers of the largest batch
shape are made once (pinned host memory on CUDA, so the copy to the GPU is
asynchronous) and lent out as views of the size a batch needs. The allocator
is injected, so the pool itself imports no torch.
"""

from __future__ import annotations

import threading
from typing import Any, Callable


class BufferPool:
    """Lends fixed-shape buffers; `allocations` counts real allocations."""

    def __init__(self, allocate: Callable[[], Any], size: int = 2):
        """`allocate()` makes one buffer (any object); `size` are made up front."""
        if size < 1:
            raise ValueError(f"pool size must be >= 1, got {size}")
        self._allocate = allocate
        self._free: list[Any] = []
        self._lock = threading.Lock()
        self.allocations = 0
        self.acquisitions = 0
        for _ in range(size):
            self._free.append(self._new())

    def _new(self) -> Any:
        self.allocations += 1
        return self._allocate()

    def acquire(self) -> Any:
        """A free buffer; a new one only when all are lent (counted)."""
        with self._lock:
            self.acquisitions += 1
            return self._free.pop() if self._free else self._new()

    def release(self, buffer: Any) -> None:
        """Return a buffer for reuse."""
        with self._lock:
            self._free.append(buffer)

    @property
    def free(self) -> int:
        return len(self._free)
