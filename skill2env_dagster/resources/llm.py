"""LLMResource: the Dagster adapter over `skill2env_dagster.llm` (empty base_url/model => offline generators)."""

from __future__ import annotations

import os

import dagster as dg
from pydantic import Field

from skill2env_dagster.llm import LLMClient, LLMConfig, Price

ENV_PREFIX = "S2E_LLM_"


class PriceConfig(dg.Config):
    input_per_mtok: float = Field(default=0.0, ge=0, description="USD per million prompt tokens.")
    output_per_mtok: float = Field(default=0.0, ge=0, description="USD per million completion tokens.")


class LLMResource(dg.ConfigurableResource):
    """An OpenAI-compatible endpoint (vLLM, NIM, OpenAI). Pass the key as `dg.EnvVar(...)`, never a literal."""

    base_url: str = Field(default="", description="e.g. http://127.0.0.1:8000/v1; empty = offline generator.")
    api_key: str = Field(default="", description="Set with dg.EnvVar('S2E_LLM_API_KEY'); never logged or stored.")
    model: str = Field(default="", description="Model name; empty = offline generator.")
    temperature: float = 0.2
    max_tokens: int = 4096
    timeout: float = Field(default=60.0, description="Seconds per HTTP attempt.")
    max_retries: int = 4
    max_repairs: int = 1
    structured_mode: str = Field(default="auto", description="auto | json_schema | json_object")
    cache_dir: str = Field(default="var/llm_cache", description="On-disk response cache; empty disables it.")
    prices: dict[str, PriceConfig] = Field(default_factory=dict, description="model -> price per million tokens.")

    def is_offline(self) -> bool:
        return self.to_config().offline

    def to_config(self) -> LLMConfig:
        return LLMConfig(
            base_url=self.base_url, api_key=self.api_key, model=self.model, temperature=self.temperature,
            max_tokens=self.max_tokens, timeout=self.timeout, max_retries=self.max_retries,
            max_repairs=self.max_repairs, structured_mode=self.structured_mode,  # type: ignore[arg-type]
            cache_dir=self.cache_dir,
            prices={m: Price(input_per_mtok=p.input_per_mtok, output_per_mtok=p.output_per_mtok)
                    for m, p in self.prices.items()},
        )

    def fingerprint(self) -> dict[str, object]:
        return self.to_config().fingerprint()

    def client(self) -> LLMClient:
        """A client for this endpoint; raises LLMError(llm_unavailable) when offline."""
        return LLMClient(self.to_config())

    @classmethod
    def from_env(cls) -> LLMResource:
        """Built from S2E_LLM_* variables; the key goes through dg.EnvVar so run config never holds its value."""
        env = os.environ
        return cls(
            base_url=env.get(f"{ENV_PREFIX}BASE_URL", ""),
            model=env.get(f"{ENV_PREFIX}MODEL", ""),
            api_key=dg.EnvVar(f"{ENV_PREFIX}API_KEY") if env.get(f"{ENV_PREFIX}API_KEY") else "",
            temperature=float(env.get(f"{ENV_PREFIX}TEMPERATURE", "0.2")),
            max_tokens=int(env.get(f"{ENV_PREFIX}MAX_TOKENS", "4096")),
            timeout=float(env.get(f"{ENV_PREFIX}TIMEOUT", "60")),
            cache_dir=env.get(f"{ENV_PREFIX}CACHE_DIR", "var/llm_cache"),
        )


def env_fingerprint() -> dict[str, object]:
    """Model settings as the environment defines them at import time (feeds the assets' code_version)."""
    env = os.environ
    return LLMConfig(
        base_url=env.get(f"{ENV_PREFIX}BASE_URL", ""), model=env.get(f"{ENV_PREFIX}MODEL", ""),
        temperature=float(env.get(f"{ENV_PREFIX}TEMPERATURE", "0.2")),
        max_tokens=int(env.get(f"{ENV_PREFIX}MAX_TOKENS", "4096")),
    ).fingerprint()
