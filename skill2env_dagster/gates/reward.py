"""Parse a verifier's reward file with Harbor's semantics, but stricter (1–6 finite metrics in [0, 1])."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from skill2env_dagster.reasons import ReasonCode

MAX_METRICS = 6
MAX_REWARD_BYTES = 64 * 1024
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Reward:
    """Metrics, or the reason they are unusable (then `metrics` is empty and `problem` says why)."""

    metrics: dict[str, float] = field(default_factory=dict)
    reason: ReasonCode | None = None
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.reason is None


def _bad(reason: ReasonCode, problem: str) -> Reward:
    return Reward(reason=reason, problem=problem)


def _number(key: str, value: object) -> float:
    if isinstance(value, bool):
        return float(value)  # Harbor maps booleans to 1/0
    if not isinstance(value, (int, float)):
        raise ValueError(f"metric {key!r} is {type(value).__name__}, not a number")
    return float(value)


def parse_reward(name: str | None, data: bytes | None) -> Reward:
    """`name` is 'reward.json' or 'reward.txt' (json wins upstream); None means neither file existed."""
    if name is None or data is None:
        return _bad(ReasonCode.REWARD_MISSING, "no /logs/verifier/reward.json or reward.txt")
    if len(data) > MAX_REWARD_BYTES:
        return _bad(ReasonCode.REWARD_INVALID, f"{name} is {len(data)} bytes")
    text = data.decode("utf-8", errors="replace").strip()
    if not text:
        return _bad(ReasonCode.REWARD_EMPTY, f"{name} is empty")
    try:
        if name == "reward.txt":
            metrics = {"reward": float(text)}
        else:
            obj = json.loads(text)
            if not isinstance(obj, dict):
                raise ValueError(f"reward.json is a {type(obj).__name__}, not an object")
            metrics = {str(k): _number(k, v) for k, v in obj.items()}
    except ValueError as e:
        return _bad(ReasonCode.REWARD_INVALID, f"{name}: {e}"[:500])
    return _validate(name, metrics)


def _validate(name: str, metrics: dict[str, float]) -> Reward:
    if not 1 <= len(metrics) <= MAX_METRICS:
        return _bad(ReasonCode.REWARD_INVALID, f"{name} has {len(metrics)} metrics (want 1–{MAX_METRICS})")
    for key, value in metrics.items():
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            return _bad(ReasonCode.REWARD_INVALID, f"{name}: metric {key!r} = {value} is not in [0, 1]")
    return Reward(metrics=metrics)


def all_full(metrics: dict[str, float]) -> bool:
    """Oracle rule: every metric at 1 (within 1e-9)."""
    return bool(metrics) and all(v >= 1.0 - TOLERANCE for v in metrics.values())


def all_zero(metrics: dict[str, float]) -> bool:
    """No-op rule: every metric at 0 (within 1e-9)."""
    return bool(metrics) and all(v <= TOLERANCE for v in metrics.values())
