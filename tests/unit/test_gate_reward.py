"""Reward parsing: Harbor's protocol, stricter (1–6 finite metrics in [0, 1]; missing/empty/malformed named)."""

from __future__ import annotations

import pytest

from skill2env_dagster.gates.reward import all_full, all_zero, parse_reward
from skill2env_dagster.reasons import ReasonCode


@pytest.mark.parametrize(
    ("name", "data", "metrics"),
    [
        ("reward.txt", b"1\n", {"reward": 1.0}),
        ("reward.txt", b" 0.25 ", {"reward": 0.25}),
        ("reward.json", b'{"a": 1, "b": 0.5}', {"a": 1.0, "b": 0.5}),
        ("reward.json", b'{"a": true, "b": false}', {"a": 1.0, "b": 0.0}),
        ("reward.json", b'{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1}', dict.fromkeys("abcdef", 1.0)),
    ],
)
def test_valid_rewards(name, data, metrics):
    reward = parse_reward(name, data)
    assert reward.ok and reward.metrics == metrics


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        (None, None, ReasonCode.REWARD_MISSING),
        ("reward.txt", b"", ReasonCode.REWARD_EMPTY),
        ("reward.json", b"  \n", ReasonCode.REWARD_EMPTY),
        ("reward.txt", b"2", ReasonCode.REWARD_INVALID),
        ("reward.txt", b"-1", ReasonCode.REWARD_INVALID),
        ("reward.txt", b"nan", ReasonCode.REWARD_INVALID),
        ("reward.txt", b"inf", ReasonCode.REWARD_INVALID),
        ("reward.txt", b"yes", ReasonCode.REWARD_INVALID),
        ("reward.json", b"{}", ReasonCode.REWARD_INVALID),
        ("reward.json", b"[1]", ReasonCode.REWARD_INVALID),
        ("reward.json", b'{"a": "1"}', ReasonCode.REWARD_INVALID),
        ("reward.json", b'{"a": {"b": 1}}', ReasonCode.REWARD_INVALID),
        ("reward.json", b'{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1}', ReasonCode.REWARD_INVALID),
        ("reward.json", b'{"a": NaN}', ReasonCode.REWARD_INVALID),
        ("reward.json", b"{not json", ReasonCode.REWARD_INVALID),
    ],
)
def test_invalid_rewards_carry_their_reason(name, data, reason):
    reward = parse_reward(name, data)
    assert not reward.ok
    assert reward.reason is reason and reward.problem


def test_oracle_and_nop_rules():
    assert all_full({"a": 1.0, "b": 1 - 1e-12}) and not all_full({"a": 1.0, "b": 0.999})
    assert all_zero({"a": 0.0, "b": 1e-12}) and not all_zero({"a": 0.0, "b": 0.01})
    assert not all_full({}) and not all_zero({})
