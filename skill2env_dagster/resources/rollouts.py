"""RolloutsResource: where the rollout settings come from, and the judge's own endpoint (default: the model's)."""

from __future__ import annotations

import os

import dagster as dg
from pydantic import Field, SecretStr

from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.llm.config import from_env as env_config
from skill2env_dagster.resources.llm import env_task_fingerprint
from skill2env_dagster.rollouts.settings import RolloutSettings, judge_fingerprint, load_settings, solver_fingerprint
from skill2env_dagster.versions import is_online

JUDGE_PREFIX = "S2E_JUDGE_"


class RolloutsResource(dg.ConfigurableResource):
    """Solver configurations, limits, judge and reward form (a YAML file) plus an optional separate judge
    endpoint. Pass the judge key as `dg.EnvVar('S2E_JUDGE_API_KEY')`, never a literal."""

    settings_file: str = Field(default="", description="Rollout settings YAML; empty = $S2E_ROLLOUTS, else defaults.")
    judge_base_url: str = Field(default="", description="Judge endpoint; empty = the model endpoint (S2E_LLM_*).")
    judge_model: str = Field(default="", description="Judge model; empty = the model endpoint's.")
    judge_api_key: str = Field(default="", description="Set with dg.EnvVar('S2E_JUDGE_API_KEY').")

    def settings(self) -> RolloutSettings:
        return load_settings(self.settings_file or None)

    def judge_default(self, model: LLMConfig) -> LLMConfig:
        """The endpoint the judge settings fall back to: this resource's judge endpoint, else the model's."""
        if not (self.judge_base_url or self.judge_model):
            return model
        return model.model_copy(update={"base_url": self.judge_base_url or model.base_url,
                                        "model": self.judge_model or model.model,
                                        "api_key": SecretStr(self.judge_api_key or
                                                             model.api_key.get_secret_value())})

    @classmethod
    def from_env(cls) -> RolloutsResource:
        env = os.environ
        key = dg.EnvVar(f"{JUDGE_PREFIX}API_KEY") if env.get(f"{JUDGE_PREFIX}API_KEY") else ""
        return cls(judge_base_url=env.get(f"{JUDGE_PREFIX}BASE_URL", ""),
                   judge_model=env.get(f"{JUDGE_PREFIX}MODEL", ""), judge_api_key=key)


def env_solver_fingerprint() -> dict[str, object]:
    """Solver settings as the environment defines them at import time (feeds solver_rollouts' code version)."""
    return solver_fingerprint(load_settings(), env_config())


def env_hardening_fingerprint() -> dict[str, object]:
    """Hardening rolls out with the solvers and rebuilds with the task creator's model (if any)."""
    solvers = env_solver_fingerprint()
    return solvers if not is_online(solvers) else {**solvers, "creator": env_task_fingerprint()}


def env_judge_fingerprint() -> dict[str, object]:
    """Judge settings as the environment defines them at import time (feeds judge_scores' code version)."""
    judge = RolloutsResource.from_env().judge_default(env_config())
    return judge_fingerprint(load_settings(), judge)
