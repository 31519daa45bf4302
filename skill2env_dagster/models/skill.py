"""The skill record: what the crawl knows about one SKILL.md folder, and the snapshot row it becomes."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.models.plan import Usage
from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1


FileKind = Literal["text", "binary", "symlink"]
FrontmatterStatus = Literal["ok", "missing", "invalid_yaml", "fallback"]


class SkillStatus(StrEnum):
    ELIGIBLE = "eligible"
    SCREENED_OUT = "screened_out"
    DUPLICATE = "duplicate"
    INVALID = "invalid"


class FileEntry(BaseModel):
    """One file of a skill bundle, content-addressed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rel_path: str = Field(description="Path relative to the skill folder, POSIX separators.")
    size: int = Field(ge=0)
    sha256: str = Field(description="SHA-256 of the bytes (of the link text for symlinks that are not followed).")
    kind: FileKind
    symlink_target: str | None = Field(default=None, description="The link text of a symlink. A SKILL.md symlink "
                                       "followed under the in-source policy keeps it, with kind/sha256 of the target.")
    refused: ReasonCode | None = Field(default=None, description="Why this file was not read, if it was not.")


class Finding(BaseModel):
    """One piece of evidence for a verdict: which rule fired, where, on what text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: ReasonCode
    rule: str = Field(description="Rule id from the screening rule book, or a built-in check name.")
    file: str = Field(description="File relative to the skill folder ('' for the skill as a whole).")
    line: int = Field(ge=0, description="1-based line number; 0 when the finding is not tied to a line.")
    text: str = Field(description="The matched text, truncated to 200 characters.")


class OpinionReason(BaseModel):
    """One blocking reason the model gave, with a quote verified to occur in the skill (file, line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: ReasonCode
    file: str
    line: int = Field(ge=0)
    evidence: str = Field(description="The model's quote, as found in the file.")
    why: str


class Disagreement(BaseModel):
    """Where the model and the rules differ: the verdict keeps the rules' blocking codes (unless the model clears
    one with a verified quote and clearing is on) and adds the model's verified ones, and every difference is
    recorded here (and shown in the asset's metadata)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: ReasonCode
    kind: Literal["rules_only", "model_only", "unverified_evidence", "model_cleared", "model_would_clear",
                  "kept_unseen"]
    detail: str


class SecondOpinion(BaseModel):
    """The model's second opinion on a screening verdict (present only when an endpoint is configured)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    prompt_version: str
    cached: bool = Field(description="Answered from the second-opinion cache (same bundle digest and prompt).")
    status: Literal["answered", "failed"] = Field(default="answered", description="failed: the call failed, timed "
                                                  "out or answered outside the schema; the rules' verdict stands.")
    failure: ReasonCode | None = Field(default=None, description="Why the call failed (a reasons.py code).")
    summary: str = ""
    reasons: list[OpinionReason] = Field(default_factory=list, description="The model's verified reasons.")
    added: list[ReasonCode] = Field(default_factory=list, description="Blocking codes only the model found.")
    cleared: list[ReasonCode] = Field(default_factory=list, description="Rule codes the model showed the main "
                                      "workflow does without, removed from the verdict (settings.screen."
                                      "second_opinion_clears; never malicious or harmful).")
    cleared_findings: list[Finding] = Field(default_factory=list, description="The rules' findings the model "
                                            "cleared (only on lines it was shown), kept here as evidence of what "
                                            "the rules saw.")
    files_shown: list[str] = Field(default_factory=list, description="Files the prompt showed, in its order.")
    files_left_out: list[str] = Field(default_factory=list, description="Files it did not show, with why.")
    disagreements: list[Disagreement] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage, description="What this opinion cost (a cache hit: one cache_hits, "
                         "no tokens); counted in the run's model usage with the other stages.")


class SkillRecord(BaseModel):
    """Everything later stages need about one skill; validated on every read and write."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    skill_id: str = Field(description="Stable id and Dagster partition key: source name + relative path, sanitised.")
    source: str = Field(description="Name of the configured source.")
    source_kind: Literal["dir", "git"]
    source_commit: str | None = Field(default=None, description="Resolved commit for git sources.")
    source_uri: str = Field(description="Folder path or git URL of the source.")
    rel_path: str = Field(description="Skill folder relative to the source root ('.' when the root is the skill).")
    abs_path: str = Field(description="Skill folder on this machine (inside the git cache for git sources).")
    skill_file: str = Field(description="Name of the SKILL.md file as found (SKILL.md / skill.md / Skill.md).")
    name: str | None = None
    description: str | None = None
    license: str | None = None
    domain: str = Field(default="general", description="Coarse domain guessed from the skill's vocabulary.")
    frontmatter: dict[str, Any] = Field(default_factory=dict)
    frontmatter_status: FrontmatterStatus = "ok"
    body: str = ""
    files: list[FileEntry] = Field(default_factory=list)
    bundle_digest: str = Field(description="SHA-256 over sorted (relative path, file digest) pairs.")
    body_hash: str = Field(default="", description="Hash of the whitespace/case-normalised body (exact duplicates).")
    status: SkillStatus = SkillStatus.ELIGIBLE
    reasons: list[ReasonCode] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list, description="Spec-conformance warnings; never block.")
    duplicate_of: str | None = None
    nested_skills: list[str] = Field(default_factory=list, description="Skill ids found inside this folder.")
    fixture_of: str | None = Field(default=None, description="Set when this skill is a test fixture of another.")
    second_opinion: SecondOpinion | None = Field(default=None, description="The model's second opinion, when an "
                                                 "endpoint is configured (skillhub_snapshot).")

    @property
    def is_eligible(self) -> bool:
        """The one eligibility predicate: only an eligible, canonical, non-fixture skill is planned and built."""
        return self.status == SkillStatus.ELIGIBLE and not self.duplicate_of and not self.fixture_of

    def text_for_retrieval(self) -> str:
        return "\n".join(x for x in (self.name or "", self.description or "", self.body) if x)
