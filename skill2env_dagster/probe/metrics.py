"""Rank arithmetic: where the own skill lands among all candidates, and the rates built on it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from skill2env_dagster.models.probe import RankMetrics

TIE_TOLERANCE = 1e-9


def truth_ranks(scores: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """1-based rank of each row's true column, counting every tie against it.

    Pessimistic ties matter: an empty query scores 0 everywhere and must rank last, not first. The tolerance makes
    float residue (sums of parts, full minus masked scores) a tie rather than a win.
    """
    own = scores[np.arange(scores.shape[0]), truth]
    return (scores >= (own - TIE_TOLERANCE)[:, None]).sum(axis=1).astype(np.int64)


def rank_metrics(ranks: Sequence[int] | np.ndarray) -> RankMetrics:
    r = np.asarray(ranks, dtype=np.float64)
    if r.size == 0:
        return RankMetrics(n=0, top1=0.0, top10=0.0, mrr=0.0)
    return RankMetrics(
        n=int(r.size),
        top1=float(np.mean(r <= 1)),
        top10=float(np.mean(r <= 10)),
        mrr=float(np.mean(1.0 / r)),
    )


def grouped_metrics(ranks: Sequence[int] | np.ndarray, labels: Sequence[str]) -> dict[str, RankMetrics]:
    """Metrics per label (domain, generator), keys sorted so reports diff cleanly."""
    groups: dict[str, list[int]] = defaultdict(list)
    for rank, label in zip(ranks, labels, strict=True):
        groups[label].append(int(rank))
    return {k: rank_metrics(groups[k]) for k in sorted(groups)}
