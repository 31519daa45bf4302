"""The error a model call raises: it carries what the failed call spent, so callers can still report it."""

from __future__ import annotations

from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import ReasonCode, Skill2EnvError


class LLMError(Skill2EnvError):
    """The model endpoint failed or kept answering outside the schema. `usage` is what the failed call spent
    (tokens are paid for whether or not the reply was usable), so callers can still report it."""

    def __init__(self, reason: ReasonCode, message: str, usage: Usage | None = None) -> None:
        super().__init__(reason, message)
        self.usage = usage
