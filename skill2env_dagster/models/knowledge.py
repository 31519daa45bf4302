"""What a skill teaches, extracted from its own text: the `skill_knowledge` artifact.

Every item keeps a `SourceRef` (file, 1-based line, a verbatim quote of that line), so a task built on a rule can
say exactly which line of the skill it came from, and a test can check that the line really says it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

Modality = Literal["must", "must_not", "should", "should_not", "prefer"]
Comparator = Literal["lt", "le", "gt", "ge", "eq"]
ArtifactRole = Literal["data", "template", "config", "schema", "script", "reference", "asset", "other"]


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceRef(_Item):
    """Where a piece of knowledge is written: `quote` is a verbatim substring of line `line` of `file`."""

    file: str = Field(description="Path relative to the skill folder.")
    line: int = Field(ge=1)
    quote: str = Field(max_length=200)

    @property
    def label(self) -> str:
        return f"{self.file}:{self.line}"


class Rule(_Item):
    """A must / never / always / should statement, a checklist item or an imperative item of a rules section."""

    text: str = Field(description="The statement, inline markup removed.")
    modality: Modality
    section: str = Field(description="The heading the rule sits under ('' at top level).")
    origin: Literal["sentence", "checklist", "rules_section"]
    exception: str = Field(default="", description="The rule's own exception clause (except …, unless …).")
    tokens: list[str] = Field(default_factory=list, description="Code spans the rule names.")
    ref: SourceRef


class ProcedureStep(_Item):
    n: int = Field(ge=1)
    text: str
    optional: bool = Field(description="The step says it applies only sometimes (optional, if needed, when …).")
    ref: SourceRef


class Procedure(_Item):
    """An ordered procedure: a numbered list or a run of numbered step headings."""

    title: str
    kind: Literal["numbered_list", "step_headings"]
    steps: list[ProcedureStep] = Field(min_length=3)
    ref: SourceRef


class Checklist(_Item):
    title: str
    items: list[Rule] = Field(min_length=2)
    ref: SourceRef


class Threshold(_Item):
    """A numeric limit on a measurable quantity: `subject` `comparator` `value` `unit` ("under 50 characters")."""

    subject: str = Field(description="What is measured, as the skill names it ('' when it names nothing).")
    unit: str = Field(description="Normalised unit: characters, words, lines, items, percent, seconds, …")
    comparator: Comparator
    value: float
    text: str = Field(description="The whole sentence the limit is stated in.")
    scope: str = Field(default="", description="An exception or scope clause in the same sentence.")
    section: str = Field(default="", description="The heading the limit sits under (often its scope: 'P1').")
    ref: SourceRef


class Default(_Item):
    """A documented default: `key` is `value` unless set."""

    key: str
    value: str
    text: str
    origin: Literal["table", "prose"]
    ref: SourceRef


class Pitfall(_Item):
    """A mistake the skill warns about (gotchas, common mistakes, do-not lines) or something it excludes."""

    text: str
    kind: Literal["pitfall", "exclusion"]
    section: str
    ref: SourceRef


class WorkedExample(_Item):
    kind: Literal["command", "io_pair", "code"]
    language: str = ""
    text: str = Field(description="The command or code (bounded), or 'input → output'.")
    input: str = ""
    output: str = ""
    ref: SourceRef


class ShippedArtifact(_Item):
    path: str
    role: ArtifactRole
    size: int = Field(ge=0)
    text: bool = Field(description="A readable text file (binary files are listed, never read).")


class LookupTable(_Item):
    """A reference table (Markdown table or a 'Key: value' list): header, rows and each row's line."""

    title: str
    columns: list[str] = Field(min_length=2)
    rows: list[list[str]] = Field(min_length=2)
    row_lines: list[int]
    origin: Literal["table", "definition_list"]
    ref: SourceRef


class Convention(_Item):
    """A naming or format convention stated by the skill (kebab-case, ISO 8601 dates, semver, …)."""

    kind: str
    subject: str
    text: str
    ref: SourceRef


class TokenRule(_Item):
    """A token the skill forbids, requires, or wants replaced ("use `X` instead of `Y`")."""

    polarity: Literal["forbid", "require", "replace"]
    token: str
    replacement: str = ""
    text: str
    exception: str = ""
    ref: SourceRef


class Section(_Item):
    title: str
    level: int = Field(ge=1, le=6)
    ref: SourceRef


class Template(_Item):
    """An output template the skill shows: a fenced Markdown block (or section) with its required headings."""

    title: str
    headings: list[str] = Field(min_length=2)
    fields: list[str] = Field(default_factory=list, description="'**Label:**' lines the template asks to fill.")
    ref: SourceRef


class SkillKnowledge(BaseModel):
    """The `skill_knowledge` artifact of one skill (cached by bundle digest and extractor version)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    skill_id: str
    bundle_digest: str
    extractor_version: str
    files_read: list[str] = Field(default_factory=list)
    sections: list[Section] = Field(default_factory=list)
    rules: list[Rule] = Field(default_factory=list)
    procedures: list[Procedure] = Field(default_factory=list)
    checklists: list[Checklist] = Field(default_factory=list)
    thresholds: list[Threshold] = Field(default_factory=list)
    defaults: list[Default] = Field(default_factory=list)
    pitfalls: list[Pitfall] = Field(default_factory=list)
    examples: list[WorkedExample] = Field(default_factory=list)
    artifacts: list[ShippedArtifact] = Field(default_factory=list)
    tables: list[LookupTable] = Field(default_factory=list)
    conventions: list[Convention] = Field(default_factory=list)
    token_rules: list[TokenRule] = Field(default_factory=list)
    templates: list[Template] = Field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How much of each kind was found (asset metadata, benchmarks)."""
        kinds = ("rules", "procedures", "checklists", "thresholds", "defaults", "pitfalls", "examples", "artifacts",
                 "tables", "conventions", "token_rules", "templates")
        return {k: len(getattr(self, k)) for k in kinds}

    def refs(self) -> list[SourceRef]:
        """Every source reference held, for checks that each quote is really on its line."""
        out: list[SourceRef] = [s.ref for s in self.sections]
        for name in ("rules", "procedures", "checklists", "thresholds", "defaults", "pitfalls", "examples",
                     "tables", "conventions", "token_rules", "templates"):
            out += [x.ref for x in getattr(self, name)]
        out += [s.ref for p in self.procedures for s in p.steps]
        out += [i.ref for c in self.checklists for i in c.items]
        return out
