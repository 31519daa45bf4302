"""Settings of one OpenAI-compatible endpoint, kept apart from Dagster so domain code and tests can build them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

StructuredMode = Literal["auto", "json_schema", "json_object"]


class Price(BaseModel):
    """USD per million tokens for one model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(default=0.0, ge=0)
    output_per_mtok: float = Field(default=0.0, ge=0)


class LLMConfig(BaseModel):
    """Everything that shapes a call; the key is a SecretStr so repr(), logs and dumps never show it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = ""
    api_key: SecretStr = SecretStr("")
    model: str = ""
    temperature: float = Field(default=0.2, ge=0, le=2)
    max_tokens: int = Field(default=4096, ge=1)
    timeout: float = Field(default=60.0, gt=0, description="Seconds per HTTP attempt.")
    max_retries: int = Field(default=4, ge=0, description="Extra attempts on 429/5xx/timeouts/dropped connections.")
    max_repairs: int = Field(default=1, ge=0, description="Extra calls asking the model to fix a schema violation.")
    backoff_base: float = Field(default=0.5, ge=0, description="First backoff delay in seconds (doubles per try).")
    backoff_cap: float = Field(default=30.0, ge=0, description="Upper bound on one backoff delay (and Retry-After).")
    structured_mode: StructuredMode = "auto"
    cache_dir: str = ""
    prices: dict[str, Price] = Field(default_factory=dict)

    @property
    def offline(self) -> bool:
        """No endpoint configured: callers use the deterministic offline generators instead."""
        return not (self.base_url.strip() and self.model.strip())

    def fingerprint(self) -> dict[str, object]:
        """The settings that change what the model answers (for prompt versions); never includes the key."""
        if self.offline:
            return {"generator": "offline"}
        return {
            "base_url": self.base_url.rstrip("/"),
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "structured_mode": self.structured_mode,
        }
