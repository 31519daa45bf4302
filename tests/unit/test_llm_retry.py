"""The retry policy as pure functions."""

from __future__ import annotations

import email.utils
import random

from skill2env_dagster.llm.retry import backoff_delay, retry_after_seconds


def test_retry_after_forms():
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    date = email.utils.formatdate(1_000_010.0, usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=1_000_000.0) == 10.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_doubles_with_jitter_and_cap():
    rng = random.Random(1)
    d = [backoff_delay(a, base=1.0, cap=5.0, retry_after=None, rng=rng) for a in range(5)]
    assert 0.5 <= d[0] <= 1 and 1 <= d[1] <= 2 and 2 <= d[2] <= 4 and all(2.5 <= x <= 5 for x in d[3:])
    assert backoff_delay(0, base=1.0, cap=5.0, retry_after=60) == 5.0
    assert backoff_delay(3, base=1.0, cap=5.0, retry_after=2) == 2.0
