"""What a rollout run is made of: named solver configurations, agent limits, the judge, the reward form.

Loaded from a YAML file named by `$S2E_ROLLOUTS` (`config/rollouts.example.yaml` shows every field with its
default; without a file the defaults below apply); every endpoint field left empty falls back
to the default model endpoint (`S2E_LLM_*`), the judge's to `S2E_JUDGE_*` first. The settings that change what
a rollout or a judgement produces form the assets' code versions (`fingerprint`), so editing them marks exactly
the affected partitions stale; API keys are read from the environment at run time and never stored.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.models.labels import check_label
from skill2env_dagster.models.rollout import RESERVED_SOLVER_NAMES, RewardForm
from skill2env_dagster.reasons import InputError, ReasonCode

SETTINGS_ENV = "S2E_ROLLOUTS"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Endpoint(_Strict):
    """An OpenAI-compatible endpoint; empty fields take the default endpoint's value."""

    base_url: str = ""
    model: str = ""
    api_key_env: str = Field(default="", description="Name of the variable holding the key (never the key).")

    def resolve(self, default: LLMConfig, **overrides: object) -> LLMConfig:
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else default.api_key.get_secret_value()
        return default.model_copy(update={"base_url": self.base_url or default.base_url,
                                          "model": self.model or default.model,
                                          "api_key": SecretStr(key), **overrides})


class SolverConfig(Endpoint):
    """One named policy: a model, its sampling temperature and how many attempts (k) each task gets."""

    name: str
    temperature: float = Field(default=0.7, ge=0, le=2)
    attempts: int = Field(default=4, ge=1, le=64, description="Rollouts per task (k).")
    max_tokens: int = Field(default=4096, ge=64, description="Completion tokens per model turn.")

    @field_validator("name")
    @classmethod
    def _label(cls, v: str) -> str:
        """A label, not a reference's name, and without "--": a rollout id (`task--solver--attempt`) then names
        exactly one episode of one task (a task name may hold "--"; the solver and attempt parts cannot)."""
        if v in RESERVED_SOLVER_NAMES:
            raise ValueError(f"solver name {v!r} is reserved for a reference episode "
                             f"({', '.join(sorted(RESERVED_SOLVER_NAMES))}); choose another")
        if "--" in v:
            raise ValueError(f"solver name {v!r} may not contain '--' (the separator of rollout ids)")
        return check_label(v)


class AgentLimits(_Strict):
    """Bounds of one episode; the task's own [agent] timeout_sec is enforced on top, as a hard kill."""

    max_turns: int = Field(default=30, ge=1, description="Model turns per episode.")
    max_total_tokens: int = Field(default=300_000, ge=1000, description="Prompt + completion tokens per episode.")
    max_wall_sec: float = Field(default=1200.0, gt=0, description="Wall time of the agent phase.")
    command_timeout_sec: float = Field(default=120.0, gt=0, description="Per bash call.")
    output_head_bytes: int = Field(default=3000, ge=100, description="Kept from the start of a tool's output.")
    output_tail_bytes: int = Field(default=3000, ge=100, description="Kept from the end of a tool's output.")
    output_cap_bytes: int = Field(default=1 << 20, ge=4096, description="Read at most this much of one output.")
    file_write_tool: bool = Field(default=True, description="Offer `write_file` besides `bash`.")


class JudgeSettings(Endpoint):
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_attempts: int = Field(default=3, ge=1, le=10, description="Calls before a verdict is `judge_failed`.")
    trajectory_chars: int = Field(default=80_000, ge=2000, description="Budget of the rendered trajectory.")
    diff_chars: int = Field(default=30_000, ge=500, description=(
        "Budget of the final workspace view: every path changed, then every file the agent wrote or changed, "
        "whole, with its diff against the original."))
    calibration_margin: float = Field(default=4.0, ge=0, le=10, description=(
        "The Oracle's judge mean must exceed the no-op's by this much on a task, else `judge_miscalibrated`: "
        "the judge term is kept out of that task's rewards."))


class RolloutSettings(_Strict):
    solvers: list[SolverConfig] = Field(default_factory=lambda: [SolverConfig(name="default")], min_length=1)
    limits: AgentLimits = Field(default_factory=AgentLimits)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    reward: RewardForm = Field(default_factory=RewardForm)
    too_easy_above: float = Field(default=0.7, ge=0, le=1, description="Mean r_V above which a task is too easy.")
    sft_min_reward: float = Field(default=0.9, description="SFT keeps trajectories with reward above this.")
    hardening_rounds: int = Field(default=2, ge=0, le=10, description="Rounds R per too_easy task.")
    concurrency: int = Field(default=2, ge=1, le=16, description="Rollouts run at once in one partition.")

    @field_validator("solvers")
    @classmethod
    def _unique(cls, v: list[SolverConfig]) -> list[SolverConfig]:
        names = [s.name for s in v]
        if len(set(names)) != len(names):
            raise ValueError(f"solver names must be unique, got {names}")
        return v


def load_settings(path: Path | str | None = None) -> RolloutSettings:
    """From `path`, else $S2E_ROLLOUTS, else the defaults; InputError names the file and the variable."""
    raw = path or os.environ.get(SETTINGS_ENV, "").strip()
    if not raw:
        return RolloutSettings()
    file = Path(raw)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        return RolloutSettings.model_validate(data)
    except OSError as e:
        raise InputError(ReasonCode.UNREADABLE, f"rollout settings {file} unreadable ({SETTINGS_ENV}): {e}") from e
    except (yaml.YAMLError, ValidationError) as e:
        raise InputError(ReasonCode.INVALID_YAML, f"rollout settings {file} invalid ({SETTINGS_ENV}): {e}") from e


def solver_endpoint(solver: SolverConfig, default: LLMConfig) -> LLMConfig:
    return solver.resolve(default, temperature=solver.temperature, max_tokens=solver.max_tokens)


def judge_endpoint(judge: JudgeSettings, default: LLMConfig) -> LLMConfig:
    return judge.resolve(default, temperature=judge.temperature)


def solver_fingerprint(settings: RolloutSettings, default: LLMConfig) -> dict[str, object]:
    """What decides the rollouts (for the code version); `generator: offline` when no solver has a model."""
    solvers = [solver_endpoint(s, default) for s in settings.solvers]
    if all(s.offline for s in solvers):
        return {"generator": "offline"}
    return {"solvers": [{"name": s.name, "attempts": s.attempts, **e.fingerprint()}
                        for s, e in zip(settings.solvers, solvers, strict=True)],
            "limits": settings.limits.model_dump(), "too_easy_above": settings.too_easy_above}


def judge_fingerprint(settings: RolloutSettings, default: LLMConfig) -> dict[str, object]:
    """What decides a judgement and the combined reward (for the code version)."""
    judge = judge_endpoint(settings.judge, default)
    if judge.offline:
        return {"generator": "offline"}
    return {"judge": judge.fingerprint(), "budgets": settings.judge.model_dump(exclude={"base_url", "model",
                                                                                          "api_key_env"}),
            "reward": settings.reward.model_dump()}
