"""Task bundles: one record per created task candidate of a skill, and the `task_bundles` artifact that lists them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.blueprint import TaskBlueprint
from skill2env_dagster.models.gate import GateReport, GateVerdict
from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1

TaskStatus = Literal["retained", "rejected", "error"]
CreationStep = Literal["environment", "instruction", "tests", "rubric", "freeze", "solution", "cheats"]
# The one creation order; the builder refuses any other.
CREATION_ORDER: tuple[CreationStep, ...] = ("environment", "instruction", "tests", "rubric", "freeze", "solution",
                                            "cheats")


class StepRecord(BaseModel):
    """One creator step as it happened: which step, which attempt, which files it wrote."""

    model_config = ConfigDict(extra="forbid")

    step: CreationStep
    attempt: int = Field(default=1, ge=1, description="1 for the first write; >1 for solution repairs.")
    files: list[str] = Field(default_factory=list, description="Paths relative to the task folder.")
    note: str = Field(default="", description="Evidence passed to a repair, or the freeze hash at freeze.")


class Axes(BaseModel):
    """The six axes the task was realised with (what the task actually is, not only what was sampled)."""

    model_config = ConfigDict(extra="forbid")

    archetype: str
    primary_verifier_pattern: str
    complexity: str
    persona: str
    tone: str
    expertise: str


class CreationGate(BaseModel):
    """The gate report a candidate got when it was created, with what it was computed on: `gate_reports` reuses
    it instead of gating the same folder again while both the folder's content and the gate code are unchanged."""

    model_config = ConfigDict(extra="forbid")

    content_digest: str = Field(description="Digest of the whole task folder as gated (every file and mode).")
    gate_version: str = Field(description="Code version of the gates (and their verdict-relevant settings).")
    report: GateReport


class CreatorRun(BaseModel):
    """One candidate of the creator agent: how its session ended and what it cost (turns, tokens, wall time)."""

    model_config = ConfigDict(extra="forbid")

    candidate: int = Field(ge=1, description="1 for the first candidate of a workflow variant, 2 for its "
                           "replacement after a gate rejection, ...")
    status: TaskStatus
    reasons: list[ReasonCode] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    stop: str = Field(description="submitted | max_turns | max_tokens | max_wall_time | loop | incomplete | "
                      "model_failed | infra_failed | crashed")
    frozen: bool = False
    turns: int = Field(default=0, ge=0)
    tool_calls: int = Field(default=0, ge=0)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = Field(default=0.0, ge=0, description="Wall time of the whole session, final gate included.")
    model_seconds: float = Field(default=0.0, ge=0)
    tool_seconds: float = Field(default=0.0, ge=0, description="Tools, the agent's own gate runs included.")
    gate_runs: int = Field(default=0, ge=0, description="Gate runs: the agent's checks and the final gate.")
    repairs: int = Field(default=0, ge=0, description="Solution repairs after a final-gate rejection.")
    refusals: dict[str, int] = Field(default_factory=dict, description="Refused calls by kind (order, frozen, ...).")
    trajectory: str = Field(default="", description="ATIF trajectory file of the session.")
    path: str = Field(default="", description="Where this candidate's folder was published.")


class TaskBundle(BaseModel):
    """One task candidate: where it is, how it was made, and what the gates said."""

    model_config = ConfigDict(extra="forbid")

    task_name: str = Field(description="Deterministic: <skill>-<workflow>-v<variant>, label-safe.")
    skill_id: str
    workflow: str
    variant: int = Field(ge=0)
    axes: Axes
    recipe: str = Field(description="Which offline shape (or 'llm') produced the files.")
    image: Literal["minimal", "python"]
    status: TaskStatus = Field(description="error: the machine or the model endpoint failed, not a verdict.")
    reasons: list[ReasonCode] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list, description="Short texts from gates/creator explaining reasons.")
    path: str = Field(description="Published task folder (task_bundles/ or rejected/ area).")
    freeze_hash: str = ""
    metrics: list[str] = Field(default_factory=list, description="Names of the reward metrics test.sh writes.")
    repair_attempts: int = Field(default=0, ge=0)
    steps: list[StepRecord] = Field(default_factory=list)
    size_bytes: int = Field(default=0, ge=0)
    instruction_preview: str = Field(default="", description="The instruction text, for UI previews.")
    rubric: str = ""
    gate_status: str = Field(default="", description="Overall gate status of the last run (pass/fail/error).")
    creation_gate: CreationGate | None = Field(default=None, description="The final creation-time gate report.")
    blueprint: TaskBlueprint | None = Field(default=None, description="The contract the task was derived from.")
    creator: list[CreatorRun] = Field(default_factory=list, description="The creator agent's candidates for this "
                                      "variant, in order (empty for the offline generator).")


class TaskBundleSet(BaseModel):
    """The `task_bundles` artifact of one skill: every candidate created for it, retained or not."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    skill_id: str
    bundle_digest: str
    source_commit: str | None = None
    skill_md_path: str = Field(description="Absolute path of the SKILL.md the tasks came from (lineage).")
    generator: Literal["offline", "llm"]
    model: str | None = None
    prompt_version: str
    bundles: list[TaskBundle] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    skipped_reason: ReasonCode | None = Field(default=None, description="Set when the skill yielded no candidate.")

    def retained(self) -> list[TaskBundle]:
        return [b for b in self.bundles if b.status == "retained"]

    def reason_histogram(self) -> dict[str, int]:
        hist: dict[str, int] = {}
        for b in self.bundles:
            if b.status != "retained":
                for r in b.reasons or [ReasonCode.INTERNAL_ERROR]:
                    hist[r.value] = hist.get(r.value, 0) + 1
        return hist


class TaskGateReports(BaseModel):
    """The `gate_reports` artifact of one skill: a gate report for every retained, published task folder — gated
    again, or the creation-time report when neither the folder nor the gate code changed since (see `reused`)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    skill_id: str
    reports: dict[str, GateReport] = Field(default_factory=dict, description="Task name -> its gate report.")
    reused: list[str] = Field(default_factory=list, description="Tasks whose creation-time report was reused: same "
                              "folder content, same gate version, so gating again could only repeat it.")

    def failing(self) -> list[str]:
        return sorted(k for k, r in self.reports.items() if r.verdict != GateVerdict.RETAINED)
