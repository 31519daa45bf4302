"""Token usage and cost bookkeeping; the price table is configuration, not code."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from skill2env_dagster.llm.config import Price
from skill2env_dagster.models.plan import Usage


def call_cost(prices: Mapping[str, Price], model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """Cost of one call in USD; a model missing from the table costs 0 (local servers are free)."""
    price = prices.get(model)
    if price is None:
        return 0.0
    return (prompt_tokens * price.input_per_mtok + completion_tokens * price.output_per_mtok) / 1_000_000


def sum_usage(usages: Iterable[Usage]) -> Usage:
    total = Usage()
    for u in usages:
        total = Usage(
            calls=total.calls + u.calls,
            cache_hits=total.cache_hits + u.cache_hits,
            prompt_tokens=total.prompt_tokens + u.prompt_tokens,
            completion_tokens=total.completion_tokens + u.completion_tokens,
            cost_usd=round(total.cost_usd + u.cost_usd, 8),
        )
    return total
