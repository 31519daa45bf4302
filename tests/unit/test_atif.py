"""The ATIF model accepts what the RFC and Harbor write and rejects what they forbid."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from skill2env_dagster.models.atif import ATIF_VERSION, AtifStep, AtifTrajectory, ContentPart

# The RFC's own multi-step example (section IV), trimmed of logprobs.
RFC_EXAMPLE = {
    "schema_version": "ATIF-v1.4",
    "session_id": "025B810F-B3A2-4C67-93C0-FE7A142A947A",
    "agent": {"name": "harbor-agent", "version": "1.0.0", "model_name": "gemini-2.5-flash", "extra": {}},
    "notes": "Initial test trajectory",
    "extra": {},
    "final_metrics": {"total_prompt_tokens": 1120, "total_completion_tokens": 124, "total_cached_tokens": 200,
                      "total_cost_usd": 0.00078, "total_steps": 3, "extra": {}},
    "steps": [
        {"step_id": 1, "timestamp": "2025-10-11T10:30:00Z", "source": "user",
         "message": "What is the current trading price of Alphabet (GOOGL)?", "extra": {}},
        {"step_id": 2, "timestamp": "2025-10-11T10:30:02Z", "source": "agent", "model_name": "gemini-2.5-flash",
         "reasoning_effort": "medium", "message": "I will search.", "reasoning_content": "Two data points.",
         "tool_calls": [{"tool_call_id": "call_price_1", "function_name": "financial_search",
                         "arguments": {"ticker": "GOOGL", "metric": "price"}},
                        {"tool_call_id": "call_volume_2", "function_name": "financial_search",
                         "arguments": {"ticker": "GOOGL", "metric": "volume"}}],
         "observation": {"results": [{"source_call_id": "call_price_1", "content": "GOOGL at $185.35"},
                                     {"source_call_id": "call_volume_2", "content": "1.5M shares"}]},
         "metrics": {"prompt_tokens": 520, "completion_tokens": 80, "cached_tokens": 200, "cost_usd": 0.00045}},
        {"step_id": 3, "timestamp": "2025-10-11T10:30:05Z", "source": "agent", "reasoning_effort": "low",
         "message": "GOOGL trades at $185.35.", "metrics": {"prompt_tokens": 600, "completion_tokens": 44,
                                                             "completion_token_ids": [1722, 310], "cost_usd": 0.00033,
                                                             "extra": {"reasoning_tokens": 12}}},
    ],
}


def _traj(**changes) -> dict:
    data = json.loads(json.dumps(RFC_EXAMPLE))
    data.update(changes)
    return data


def test_the_rfc_example_validates_and_round_trips():
    traj = AtifTrajectory.model_validate(RFC_EXAMPLE)
    again = AtifTrajectory.model_validate_json(traj.to_json())
    assert again == traj
    assert "null" not in traj.to_json()  # optional fields are left out, as Harbor writes them
    assert AtifTrajectory(session_id="s", agent={"name": "a", "version": "1"},
                          steps=[{"step_id": 1, "source": "user", "message": ""}]).schema_version == ATIF_VERSION


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["steps"][1].update(step_id=5), "expected 2"),
    (lambda d: d["steps"][1]["observation"]["results"][0].update(source_call_id="nope"), "unknown tool call"),
    (lambda d: d["steps"][0].update(model_name="m"), "only apply to agent steps"),
    (lambda d: d["steps"][0].update(tool_calls=[]), "only apply to agent steps"),
    (lambda d: d["steps"][0].update(timestamp="yesterday"), "timestamp"),
    (lambda d: d["steps"][0].update(source="tool"), "source"),
    (lambda d: d.update(schema_version="ATIF-v2.0"), "schema_version"),
    (lambda d: d["agent"].pop("version"), "version"),
    (lambda d: d["steps"][1]["tool_calls"][0].update(arguments="ticker=GOOGL"), "arguments"),
    (lambda d: d.update(steps=[]), "steps"),
    (lambda d: d["steps"][1].update(unknown_field=1), "unknown_field"),
])
def test_what_the_format_forbids_is_rejected(mutate, message):
    data = _traj()
    mutate(data)
    with pytest.raises(ValidationError, match=message):
        AtifTrajectory.model_validate(data)


def test_multimodal_parts_need_their_own_field():
    assert ContentPart(type="text", text="hi").text == "hi"
    ContentPart(type="image", source={"media_type": "image/png", "path": "a.png"})
    with pytest.raises(ValidationError):
        ContentPart(type="image", text="not an image")
    step = AtifStep(step_id=1, source="user", message=[{"type": "text", "text": "look"}])
    assert isinstance(step.message, list)
