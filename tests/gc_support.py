"""Object lifetimes: run code with the cyclic garbage collector off, so that only reference
counting frees what it drops (an object kept alive by a reference cycle stays)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_off() -> Iterator[None]:
    """Collect once, then keep the cyclic collector off until the block ends."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
