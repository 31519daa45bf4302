"""The skill record: what the crawl knows about one SKILL.md folder, and the snapshot row it becomes."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from skill2env_dagster.reasons import ReasonCode

SCHEMA_VERSION = 1


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
    kind: Literal["text", "binary", "symlink"]
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
    frontmatter_status: Literal["ok", "missing", "invalid_yaml", "fallback"] = "ok"
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

    @property
    def is_eligible(self) -> bool:
        """The one eligibility predicate: only an eligible, canonical, non-fixture skill is planned and built."""
        return self.status == SkillStatus.ELIGIBLE and not self.duplicate_of and not self.fixture_of

    def text_for_retrieval(self) -> str:
        return "\n".join(x for x in (self.name or "", self.description or "", self.body) if x)
