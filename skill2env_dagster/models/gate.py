"""Gate results: one `CheckResult` per named check and a `GateReport` per task, stored as JSON."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 3  # 2: mutants, cheats, tamper, mutation_testing; the `skipped` check verdict; 3: baselines


class CheckVerdict(StrEnum):
    """`error` means the check could not be run, and never reads as a pass. `skipped` means the check does not
    apply to this task or was turned off; it neither passes nor rejects, and its evidence says why."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"


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

    @classmethod
    def over(cls, name: str, attempts: Sequence[ShortcutAttempt], seconds: float, *, passed: str,
             detail: Callable[[ShortcutAttempt], str], reason: ReasonCode | None = None,
             context: tuple[str, str] = ("", "")) -> CheckResult:
        """The verdict of a stage of shortcut attempts (mutants, baselines, cheats, tamper kit): it fails as soon
        as one attempt earned reward, with every such attempt as evidence, so the four stages cannot disagree on
        what failing means; `reason` is the stage's own code, else the first failed attempt's; `context` frames the
        evidence (what was tried, notes)."""
        failed = [a for a in attempts if a.verdict is CheckVerdict.FAIL]
        evidence = context[0] + ("; ".join(f"{a.name}: {detail(a)}" for a in failed) if failed else passed) + context[1]
        return cls(name=name, verdict=CheckVerdict.FAIL if failed else CheckVerdict.PASS,
                   reason=(reason or failed[0].reason) if failed else None, evidence=evidence[:4000],
                   seconds=round(seconds, 4))


class AttemptKind(StrEnum):
    MUTANT = "mutant"
    CHEAT = "cheat"
    TAMPER = "tamper"
    BASELINE = "baseline"  # a skill-blind baseline (gates/blind.py)


class ShortcutAttempt(BaseModel):
    """One attempt to earn reward without doing the work: a mutant of the Oracle's outputs, a creator-authored
    cheat, or a tamper-kit attack, with the verifier's per-metric rewards as evidence."""

    model_config = ConfigDict(extra="forbid")

    kind: AttemptKind
    name: str = Field(description="Mutant name (plus the output it targets), cheat file, or tamper technique.")
    family: str = Field(description="trivial | destructive | relevance | info (mutants); cheat; forge | plant.")
    verdict: CheckVerdict = Field(description="fail = the attempt succeeded (reason says how); skipped = not run.")
    reason: ReasonCode | None = None
    status: str = Field(default="", description="How the trial ended (sandbox TrialStatus), or 'not_run'.")
    metrics: dict[str, float] = Field(default_factory=dict, description="Per-metric rewards; empty = reward 0.")
    mean: float = 0.0
    evidence: str = ""
    seconds: float = Field(default=0.0, ge=0)
    work: list[str] | None = Field(
        default=None, description="Cheats: non-empty files the run left changed on the container's disk (at most 5; "
        "gates/script_batch.py WORK_FIND); None = not measured.")


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
    mutants: list[ShortcutAttempt] = Field(default_factory=list, description="Mutation testing of the verifier.")
    cheats: list[ShortcutAttempt] = Field(default_factory=list, description="solution/cheats/*.sh runs.")
    tamper: list[ShortcutAttempt] = Field(default_factory=list, description="Tamper-kit attacks.")
    baselines: list[ShortcutAttempt] = Field(default_factory=list, description="Skill-blind baseline battery: "
                                             "generic tools' answers; any metric >= 0.5 rejects the task.")
    mutation_testing: str = Field(default="on", description="'on', or why it did not run (e.g. turned off).")
    image: str | None = Field(default=None, description="Image id the runtime gates used.")
    seconds: float = Field(default=0.0, ge=0)

    def summary(self) -> dict:
        """The CLI's JSON contract: task, verdict, reason, checks, the reward of every run, mutation status."""
        return self.model_dump(mode="json", include={"task", "verdict", "reason", "checks", "oracle", "nop", "wrong",
                                                     "mutants", "cheats", "tamper", "baselines",
                                                     "mutation_testing"})
