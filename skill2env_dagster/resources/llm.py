"""LLMResource: the Dagster adapter over `skill2env_dagster.llm` (no base URL => offline generators).

The resource *is* an `LLMConfig`: it inherits every field, default, bound and cross-field check from the domain
model, so nothing is declared twice. Only `api_key` is re-typed, from SecretStr to str, because Dagster config
has no secret type and `dg.EnvVar` resolves to a string at run time; it is turned back into a SecretStr before
any client sees it.
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
from pydantic import Field

from skill2env_dagster.llm import LLMClient, LLMConfig
from skill2env_dagster.llm.config import env_var, from_env


class LLMResource(dg.ConfigurableResource, LLMConfig):
    """An OpenAI-compatible endpoint (vLLM, NIM, OpenAI). Pass the key as `dg.EnvVar(...)`, never a literal."""

    api_key: str = Field(  # type: ignore[assignment]  # str, not SecretStr: Dagster config has no secret type
        default="", description=f"Set with dg.EnvVar('{env_var('api_key')}'); never logged or stored. Empty = no "
        f"Authorization header (a keyless local server).")

    def to_config(self) -> LLMConfig:
        """The domain settings, key included. Inside a run Dagster has already resolved the EnvVar; outside one
        (a CLI building a client itself) the field still holds the variable, which is resolved here."""
        values = self.model_dump(include=set(LLMConfig.model_fields))
        if isinstance(self.api_key, dg.EnvVar):
            values["api_key"] = self.api_key.get_value() or ""
        return LLMConfig.model_validate(values)

    def client(self) -> LLMClient:
        """A client for this endpoint; raises LLMError(llm_misconfigured) when offline."""
        return LLMClient(self.to_config())

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LLMResource:
        """From the S2E_LLM_* variables, validated now (an error names the variable); the key goes through
        dg.EnvVar so run config and the UI never hold its value."""
        config = from_env(env)
        key = dg.EnvVar(env_var("api_key")) if config.api_key.get_secret_value() else ""
        return cls(**config.model_dump(exclude={"api_key"}), api_key=key)


def env_fingerprint() -> dict[str, object]:
    """Model settings as the environment defines them at import time (feeds the assets' code_version)."""
    return from_env().fingerprint()


def env_task_fingerprint() -> dict[str, object]:
    """What decides the model-backed task creator: the model settings and the creator agent's limits (which its
    prompt states); `generator: offline` without a model."""
    from skill2env_dagster.creator.settings import limits_from_env

    model = env_fingerprint()
    return model if model.get("generator") == "offline" else {**model, "creator": limits_from_env().model_dump()}
