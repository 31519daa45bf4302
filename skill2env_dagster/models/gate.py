"""Gate results: one `CheckResult` per named check and a `GateReport` per task, stored as JSON."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1


class CheckVerdict(StrEnum):
    """Tri-state: `error` means the check could not be run, and never reads as a pass."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"


class GateVerdict(StrEnum):
    RETAINED = "retained"
    REJECTED = "rejected"
    INFRA_FAILED = "infra_failed"


class CheckResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Stable check name, e.g. 'dockerfile_pinned' or 'oracle'.")
    verdict: CheckVerdict
    reason: ReasonCode | None = Field(default=None, description="Why it failed or errored; None on pass.")
    evidence: str = Field(default="", description="Short human-readable proof: the offending path, line or value.")
    seconds: float = Field(default=0.0, ge=0)

    @property
    def ok(self) -> bool:
        return self.verdict is CheckVerdict.PASS


class GateReport(BaseModel):
    """Everything the gates found about one task; `verdict` is retained only if every check passed."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    task: str = Field(description="Path of the task folder as given.")
    verdict: GateVerdict
    reason: ReasonCode | None = Field(default=None, description="First failing check's code; None when retained.")
    checks: list[CheckResult] = Field(default_factory=list)
    oracle: dict[str, float] = Field(default_factory=dict, description="Metrics the Oracle run scored.")
    nop: dict[str, float] = Field(default_factory=dict, description="Metrics the no-op run scored.")
    wrong: dict[str, float] | None = Field(default=None, description="Metrics of solution/wrong.sh, if present.")
    image: str | None = Field(default=None, description="Image id the runtime gates used.")
    seconds: float = Field(default=0.0, ge=0)

    def summary(self) -> dict:
        """The CLI's JSON contract: task, verdict, reason, checks, oracle, nop."""
        return self.model_dump(mode="json", include={"task", "verdict", "reason", "checks", "oracle", "nop", "wrong"})
