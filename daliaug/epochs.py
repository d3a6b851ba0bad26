"""Epoch arithmetic shared by every backend: shards, sample order and batch boundaries."""

from __future__ import annotations

import numpy as np


def epoch_order(n: int, shuffle: bool, seed: int, epoch: int) -> np.ndarray:
    """The sample order of one epoch: a permutation fixed by ``(seed, epoch)``."""
    if not shuffle:
        return np.arange(n)
    return np.random.default_rng([seed, epoch]).permutation(n)


def batch_bounds(n: int, batch_size: int, drop_remainder: bool) -> list[tuple[int, int]]:
    """``[start, stop)`` of each batch of an epoch of ``n`` samples."""
    stop = n - n % batch_size if drop_remainder else n
    return [(s, min(s + batch_size, stop)) for s in range(0, stop, batch_size)]


def shard_range(n: int, shard_id: int, num_shards: int) -> tuple[int, int]:
    """``[start, stop)`` of contiguous shard ``shard_id`` of ``num_shards`` over ``n`` samples,
    split as DALI's readers split them; the shards partition the samples."""
    return n * shard_id // num_shards, n * (shard_id + 1) // num_shards


def resolve_seed(seed: int | None) -> int:
    """The config's seed, or a fresh random one when it has none."""
    return seed if seed is not None else int(np.random.SeedSequence().entropy % 2**31)
