"""Retry timing: how long to wait before another attempt (which failures get one: `llm.failures`).

We drive retries ourselves (the SDK runs with max_retries=0) so that every attempt is counted, the delay policy is
a pure function tests can check, and the final failure maps to one of our reason codes.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping


def retry_after_seconds(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Parse `retry-after-ms` or `Retry-After` (seconds or an HTTP date); None when absent or unparseable."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def backoff_delay(
    attempt: int, *, base: float, cap: float, retry_after: float | None, rng: random.Random | None = None
) -> float:
    """Full-jitter exponential backoff; a server's Retry-After wins (bounded by cap) because it knows best."""
    if retry_after is not None:
        return min(retry_after, cap)
    ceiling = min(cap, base * (2**attempt))
    return (rng or random).uniform(ceiling / 2, ceiling)


def exc_headers(exc: BaseException) -> Mapping[str, str] | None:
    response = getattr(exc, "response", None)
    return getattr(response, "headers", None)
