"""Batches of skill partitions for multi-partition runs.

A Dagster run covers a *range* of a dynamic partitions definition: consecutive keys in the order they were
added. So a batch is a stretch of consecutive keys that all need the work, cut at `size`; a key that does not
need it ends the stretch (it is never re-run just to make a range longer). On a first crawl every key needs its
snapshot and the hub becomes ceil(n / size) runs; after a nightly crawl only the changed stretches run.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Batch:
    keys: tuple[str, ...]

    @property
    def first(self) -> str:
        return self.keys[0]

    @property
    def last(self) -> str:
        return self.keys[-1]


def contiguous_batches(order: Sequence[str], wanted: Collection[str], size: int) -> list[Batch]:
    """Every wanted key of `order` exactly once, in stretches of at most `size` consecutive keys."""
    if size < 1:
        raise ValueError(f"batch size must be positive, got {size}")
    wanted = set(wanted)
    batches: list[Batch] = []
    current: list[str] = []
    for key in order:
        if key in wanted and len(current) < size:
            current.append(key)
            continue
        if current:
            batches.append(Batch(tuple(current)))
        current = [key] if key in wanted else []
    if current:
        batches.append(Batch(tuple(current)))
    return batches
