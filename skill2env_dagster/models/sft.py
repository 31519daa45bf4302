"""The SFT dataset: one JSONL line per kept trajectory (OpenAI chat format with tool calls) and its manifest."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.rollout import RewardForm

SCHEMA_VERSION = 1


class SftRow(BaseModel):
    """One line of `sft.jsonl`: the conversation, the tools it could call, and where it came from."""

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, Any]] = Field(description="OpenAI chat messages: system, user, assistant, tool.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI function-calling definitions.")
    task: str
    skill: str
    rollout_id: str
    solver: str
    model: str
    reward: float = Field(description="Combined reward under `reward_form`.")
    reward_v: float
    judge_score: int
    reward_form: RewardForm
    judge_term: bool = Field(default=True, description="False: the task's judge failed its calibration, r = r_V.")


class SftExcluded(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rollout_id: str
    task: str
    reason: str = Field(description="hacking | below_threshold | not_judged | judge_failed | duplicate | "
                                    "contaminated | malformed_tool_calls | unanswered_tool_calls | "
                                    "trajectory_unreadable")
    detail: str = ""


class SftManifest(BaseModel):
    """The `sft_dataset` artifact: what is in the JSONL file and what was left out, and why."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    path: str = Field(description="The JSONL file.")
    min_reward: float
    rows: int = Field(ge=0)
    tasks: int = Field(ge=0)
    skills: int = Field(ge=0)
    candidates: int = Field(ge=0, description="Judged solver rollouts considered.")
    excluded: list[SftExcluded] = Field(default_factory=list)
    decontamination_checked: bool = Field(description="False when no benchmark was configured: not checked != clean.")
    benchmark_paths: list[str] = Field(default_factory=list)
    digest: str = Field(default="", description="sha256 of the JSONL file.")

    def excluded_by_reason(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.excluded:
            out[e.reason] = out.get(e.reason, 0) + 1
        return out
