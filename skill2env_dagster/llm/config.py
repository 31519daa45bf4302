"""Settings of one OpenAI-compatible endpoint: the single definition of every LLM setting, its default and bounds.

Domain code and tests build `LLMConfig` directly; the Dagster `LLMResource` inherits these fields (so defaults
cannot drift), and `from_env()` reads them from `S2E_LLM_*` variables through the one env loader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from skill2env_dagster.envconfig import env_name, settings_from_env
from skill2env_dagster.reasons import ReasonCode

ENV_PREFIX = "S2E_LLM_"
StructuredMode = Literal["auto", "json_schema", "json_object"]


def env_var(field: str) -> str:
    """The variable that sets an LLMConfig field, e.g. `S2E_LLM_TIMEOUT` for `timeout`."""
    return env_name(ENV_PREFIX, field)


class LLMConfig(BaseModel):
    """Everything that shapes a call; the key is a SecretStr so repr(), logs and dumps never show it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(default="", description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1. "
                          "Empty together with model = the offline generator.")
    api_key: SecretStr = Field(default=SecretStr(""), description="Bearer key. Empty = no Authorization header is "
                               "sent (a keyless local server). Never logged, cached or written.")
    model: str = Field(default="", description="Model name as the server knows it.")
    temperature: float = Field(default=0.2, ge=0, le=2)
    max_tokens: int = Field(default=4096, ge=1, description="Completion tokens per call.")
    timeout: float = Field(default=60.0, gt=0, description="Seconds per HTTP attempt.")
    max_retries: int = Field(default=4, ge=0, description="Extra attempts on 429/5xx/timeouts/resets/cut bodies.")
    max_repairs: int = Field(default=1, ge=0, description="Extra calls asking the model to fix a schema violation.")
    backoff_base: float = Field(default=0.5, ge=0, description="First backoff delay in seconds (doubles per try).")
    backoff_cap: float = Field(default=30.0, ge=0, description="Upper bound on one backoff delay (and Retry-After).")
    structured_mode: StructuredMode = Field(
        default="auto", description="auto: json_schema, falling back to json_object (once per endpoint, remembered "
        "in cache_dir) only when the server says the format is unsupported.")
    cache_dir: str = Field(default="var/llm_cache", description="Response cache and learned endpoint modes; "
                           "empty disables both on disk.")
    input_usd_per_mtok: float | None = Field(default=None, ge=0, description="USD per million prompt tokens; "
                                             "unset = cost unknown (never reported as $0).")
    output_usd_per_mtok: float | None = Field(default=None, ge=0, description="USD per million completion tokens.")

    @model_validator(mode="after")
    def _consistent(self) -> LLMConfig:
        url, model = self.base_url.strip(), self.model.strip()
        if bool(url) != bool(model):
            empty, given = ("model", "base_url") if url else ("base_url", "model")
            raise ValueError(f"{empty} ({env_var(empty)}) is empty but {given} ({env_var(given)}) is set: set both "
                             f"to use a model, or neither for the offline generator")
        if url and not url.startswith(("http://", "https://")):
            raise ValueError(f"base_url ({env_var('base_url')}) must start with http:// or https://, got {url!r}")
        if (self.input_usd_per_mtok is None) != (self.output_usd_per_mtok is None):
            unset = "input_usd_per_mtok" if self.input_usd_per_mtok is None else "output_usd_per_mtok"
            raise ValueError(f"{unset} ({env_var(unset)}) is unset but the other price is set: set both prices "
                             f"(0 for a free server) or neither (cost unknown)")
        return self

    @property
    def offline(self) -> bool:
        """No endpoint configured: callers use the deterministic offline generators instead."""
        return not self.base_url.strip()

    @property
    def endpoint(self) -> str:
        return self.base_url.strip().rstrip("/")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for one call; None when tokens were spent but no price is configured."""
        if self.input_usd_per_mtok is None or self.output_usd_per_mtok is None:
            return 0.0 if prompt_tokens == completion_tokens == 0 else None
        return (prompt_tokens * self.input_usd_per_mtok + completion_tokens * self.output_usd_per_mtok) / 1_000_000

    def describe(self) -> str:
        """Which generator is in use, for people (never the key)."""
        return "offline (no model configured)" if self.offline else f"llm: model {self.model!r} at {self.endpoint}"

    def fingerprint(self) -> dict[str, object]:
        """The settings that change what the model answers (for code versions); never includes the key."""
        if self.offline:
            return {"generator": "offline"}
        return {
            "base_url": self.endpoint,
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "structured_mode": self.structured_mode,
        }


def from_env(env: Mapping[str, str] | None = None) -> LLMConfig:
    """LLMConfig from `S2E_LLM_*`; InputError(llm_misconfigured) naming the variable when a value is invalid."""
    return settings_from_env(LLMConfig, ENV_PREFIX, env, reason=ReasonCode.LLM_MISCONFIGURED)
