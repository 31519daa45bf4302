"""Agent trajectories in ATIF, Harbor's Agent Trajectory Interchange Format (RFC 0001), schema ATIF-v1.6.

Field names, types, required/optional status and validators follow the RFC (v1.4 text) and Harbor's reference
pydantic models (`harbor/models/trajectories/`, which add `tool_definitions` (v1.5), `is_copied_context` (v1.5),
multimodal content parts (v1.6) and `continued_trajectory_ref`). Like Harbor's, every model forbids unknown keys,
so a typo is an error rather than silently lost data. We write ATIF-v1.6 and read v1.0–v1.6. ATIF-v1.7 (named by
third-party implementations: a root `trajectory_id`, embedded `subagent_trajectories`, a step `llm_call_count`) is
not modelled: we could not find its normative definition.

ATIF has no per-step duration or per-tool-call exit status; the harness records them in the step's `extra`
(see `rollouts.trajectory`), the extension point the RFC provides for exactly this.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

AtifVersion = Literal["ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4", "ATIF-v1.5", "ATIF-v1.6"]
ATIF_VERSION: AtifVersion = "ATIF-v1.6"
# Fields the RFC allows on agent steps only.
AGENT_ONLY_FIELDS = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class _Atif(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ImageSource(_Atif):
    """An image referenced by file path or URL (v1.6)."""

    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    path: str = Field(description="Relative or absolute file path, or a URL.")


class ContentPart(_Atif):
    """One part of a multimodal message (v1.6): text parts carry `text`, image parts carry `source`."""

    type: Literal["text", "image"]
    text: str | None = None
    source: ImageSource | None = None

    @model_validator(mode="after")
    def _shape(self) -> ContentPart:
        if self.type == "text" and (self.text is None or self.source is not None):
            raise ValueError("a text part needs 'text' and no 'source'")
        if self.type == "image" and (self.source is None or self.text is not None):
            raise ValueError("an image part needs 'source' and no 'text'")
        return self


class AtifAgent(_Atif):
    """The agent system that produced the trajectory."""

    name: str = Field(description="Agent system name.")
    version: str = Field(description="Agent system version.")
    model_name: str | None = Field(default=None, description="Default model; a step's model_name overrides it.")
    tool_definitions: list[dict[str, Any]] | None = Field(
        default=None, description="Tools offered to the agent, in OpenAI's function-calling schema.")
    extra: dict[str, Any] | None = None


class ToolCall(_Atif):
    tool_call_id: str = Field(description="Correlates with ObservationResult.source_call_id.")
    function_name: str
    arguments: dict[str, Any] = Field(description="A JSON object; may be empty.")


class SubagentTrajectoryRef(_Atif):
    session_id: str
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None


class ObservationResult(_Atif):
    source_call_id: str | None = Field(default=None, description="The tool call this result answers, if any.")
    content: str | list[ContentPart] | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None


class Observation(_Atif):
    results: list[ObservationResult]


class Metrics(_Atif):
    """One model call's usage. `prompt_tokens` includes cached tokens; `cached_tokens` is the cached subset."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Atif):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class AtifStep(_Atif):
    """A system prompt, a user message, or one whole agent turn (inference, actions, observations)."""

    step_id: int = Field(ge=1, description="Ordinal, from 1.")
    timestamp: str | None = Field(default=None, description="ISO 8601.")
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str | list[ContentPart] = Field(description="Required; may be empty.")
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, v: str | None) -> str | None:
        if v is not None:
            datetime.fromisoformat(v.replace("Z", "+00:00"))  # ValueError names the bad timestamp
        return v

    @model_validator(mode="after")
    def _agent_only(self) -> AtifStep:
        if self.source != "agent":
            present = [f for f in AGENT_ONLY_FIELDS if getattr(self, f) is not None]
            if present:
                raise ValueError(f"{present} only apply to agent steps, not {self.source!r}")
        return self


class AtifTrajectory(_Atif):
    """A whole agent run: sequential step ids from 1; observations answer tool calls of their own step."""

    schema_version: AtifVersion = ATIF_VERSION
    session_id: str
    agent: AtifAgent
    steps: list[AtifStep] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _sequential(self) -> AtifTrajectory:
        for i, step in enumerate(self.steps, 1):
            if step.step_id != i:
                raise ValueError(f"steps[{i - 1}].step_id is {step.step_id}, expected {i}")
        return self

    @model_validator(mode="after")
    def _answers_own_calls(self) -> AtifTrajectory:
        for step in self.steps:
            ids = {c.tool_call_id for c in step.tool_calls or ()}
            for result in step.observation.results if step.observation else ():
                if result.source_call_id is not None and result.source_call_id not in ids:
                    raise ValueError(f"step {step.step_id}: observation answers unknown tool call "
                                     f"{result.source_call_id!r}")
        return self

    def to_json(self) -> str:
        """The interchange form: null fields are left out, as Harbor writes them."""
        return self.model_dump_json(exclude_none=True, indent=1)
