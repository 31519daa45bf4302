"""Loads and validates the screening rule book (data/screening_rules.yaml) into compiled, typed rules.

The rules themselves live only in the YAML file so that a reviewer reads one place; this module just checks that
every regex compiles and every code is a known ReasonCode, so a typo in the rule book fails loudly at load time
instead of silently never matching.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

import ahocorasick
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from skill2env_dagster.reasons import InputError, ReasonCode

DEFAULT_RULES_PATH = Path(__file__).resolve().parents[2] / "data" / "screening_rules.yaml"

_DEFAULT_KEY = str(DEFAULT_RULES_PATH)

LINE_RULE_CODES = frozenset({
    ReasonCode.MALICIOUS, ReasonCode.HARMFUL, ReasonCode.NEEDS_EXTERNAL_ACCOUNT, ReasonCode.NEEDS_LIVE_SERVICE,
    ReasonCode.NEEDS_HARDWARE, ReasonCode.OS_OR_GUI_SPECIFIC,
})


def _compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as e:
        raise ValueError(f"bad regex {pattern!r}: {e}") from e


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class Rule(_Strict):
    """One line-level rule: a regex whose hits are evidence for one reason code."""

    id: str = Field(pattern=r"^[a-z]+\.[a-z0-9_]+$")
    code: ReasonCode
    description: str
    pattern: str
    weight: float = Field(default=1.0, ge=-1.0, le=1.0, description="Contribution to the code's score; a negative "
                          "weight is counter-evidence (lowers the score, never reported as a finding).")
    quotable: bool = Field(default=False, description="Hits quoted in a detection context are ignored.")
    case_sensitive: bool = False
    trusted_hosts: bool = Field(default=False, description="Hits whose URL host is a trusted installer are ignored.")
    unless: str | None = Field(default=None, description="A hit is ignored when its line matches this regex.")
    unless_skill: str | None = Field(default=None, description="The rule is off for a skill whose name or description "
                                     "matches this regex (a skill that builds MCP servers does not depend on one).")
    near: list[str] = Field(default_factory=list, description="Each regex must match within near_window lines.")
    near_window: int = Field(default=0, ge=0, le=20)
    triggers: list[str] = Field(default_factory=list, description="Lower-case substrings, one of which every match "
                                "contains; only lines holding one are searched.")

    @field_validator("triggers")
    @classmethod
    def _lower(cls, v: list[str]) -> list[str]:
        if any(t != t.lower() or not t or "\n" in t for t in v):
            raise ValueError("triggers must be non-empty lower-case strings without newlines")
        return v

    @field_validator("weight")
    @classmethod
    def _nonzero(cls, v: float) -> float:
        if v == 0:
            raise ValueError("weight must not be 0")
        return v

    @field_validator("code")
    @classmethod
    def _line_code(cls, v: ReasonCode) -> ReasonCode:
        if v not in LINE_RULE_CODES:
            raise ValueError(f"code {v.value} is not decided by line rules")
        return v

    def compiled(self) -> CompiledRule:
        flags = 0 if self.case_sensitive else re.IGNORECASE
        return CompiledRule(
            rule=self,
            rx=_compile(self.pattern, flags | re.MULTILINE),
            unless=_compile(self.unless, re.IGNORECASE) if self.unless else None,
            unless_skill=_compile(self.unless_skill, re.IGNORECASE) if self.unless_skill else None,
            near=tuple(_compile(n, re.IGNORECASE) for n in self.near),
        )


class CompiledRule:
    """A rule with its regexes compiled once per process."""

    __slots__ = ("rule", "rx", "unless", "unless_skill", "near", "triggers")

    def __init__(self, rule: Rule, rx: re.Pattern[str], unless: re.Pattern[str] | None,
                 near: tuple[re.Pattern[str], ...], unless_skill: re.Pattern[str] | None = None) -> None:
        self.rule, self.rx, self.unless, self.near, self.unless_skill = rule, rx, unless, near, unless_skill
        self.triggers = tuple(rule.triggers)


class ContextSpec(_Strict):
    window: int = Field(ge=0, le=30)
    detection_headings: str
    detection_cues: str
    reassurance: str
    fixture_paths: str
    data_files: str


class CodeScoring(_Strict):
    threshold: float = Field(gt=0)
    other_files: float = Field(ge=0, le=1.0, description="Weight of hits outside SKILL.md.")
    other_files_cap: float | None = Field(default=None, ge=0, description="Most that evidence found only outside "
                                          "SKILL.md may add to the score (None: no cap).")


class PersonaCheck(_Strict):
    description: str
    persona_cues: str
    min_persona_lines: int = Field(ge=1)
    max_actionable: int = Field(ge=0)


class EmptyCheck(_Strict):
    description: str
    max_body_words: int = Field(ge=0)


class ActionableSignals(_Strict):
    code_fence: str
    inline_command: str
    numbered_step: str
    support_file: str


class DocumentChecks(_Strict):
    persona_only: PersonaCheck
    no_actionable_content: EmptyCheck
    actionable_signals: ActionableSignals


class TextSignature(_Strict):
    spdx: str
    pattern: str


class LicenceSpec(_Strict):
    files: str
    strip_words: str
    aliases: dict[str, str]
    text_signatures: list[TextSignature]


class StandinSpec(_Strict):
    rule_id: str
    contract_file: str
    contract_text: str
    endpoint_line: str
    min_endpoints: int = Field(ge=1)
    response_example: str
    local_base_url: str


class HiddenCommentSpec(_Strict):
    rule_id: str = Field(pattern=r"^[a-z]+\.[a-z0-9_]+$")
    description: str
    files: str
    directive: str


class RuleBook(_Strict):
    """The whole rule book, validated; `compile()` gives the runtime form."""

    version: Literal[1]
    skip_files: str
    max_findings_per_rule: int = Field(ge=1)
    context: ContextSpec
    scoring: dict[ReasonCode, CodeScoring]
    trusted_installer_hosts: list[str]
    vendor_host_matches_skill: bool = True
    rules: list[Rule]
    document_checks: DocumentChecks
    licence: LicenceSpec
    standin: StandinSpec
    hidden_comments: HiddenCommentSpec | None = None

    @field_validator("rules")
    @classmethod
    def _unique_ids(cls, v: list[Rule]) -> list[Rule]:
        ids = [r.id for r in v]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate rule ids: {sorted(dupes)}")
        return v


class CompiledBook:
    """Everything screen.py needs at run time, compiled once."""

    def __init__(self, book: RuleBook) -> None:
        ctx, docs, lic, st = book.context, book.document_checks, book.licence, book.standin
        missing = {r.code for r in book.rules} - set(book.scoring)
        if missing:
            raise ValueError(f"no scoring entry for codes {sorted(c.value for c in missing)}")
        self.book = book
        self.rules = [r.compiled() for r in book.rules]
        self.skip_files = _compile(book.skip_files)
        self.headings = _compile(ctx.detection_headings)
        self.cues = _compile(ctx.detection_cues)
        self.reassurance = _compile(ctx.reassurance)
        self.fixture_paths = _compile(ctx.fixture_paths)
        self.data_files = _compile(ctx.data_files)
        self.persona_cues = _compile(docs.persona_only.persona_cues)
        sig = docs.actionable_signals
        self.code_fence = _compile(sig.code_fence, re.MULTILINE)
        self.inline_command = _compile(sig.inline_command)
        self.numbered_step = _compile(sig.numbered_step, re.MULTILINE)
        self.support_file = _compile(sig.support_file)
        self.licence_files = _compile(lic.files)
        self.licence_strip = _compile(lic.strip_words)
        self.licence_aliases = {k.lower(): v for k, v in lic.aliases.items()}
        self.licence_signatures = [(s.spdx, _compile(s.pattern)) for s in lic.text_signatures]
        self.contract_file = _compile(st.contract_file)
        self.contract_text = _compile(st.contract_text)
        self.endpoint_line = _compile(st.endpoint_line)
        self.response_example = _compile(st.response_example)
        self.local_base_url = _compile(st.local_base_url)
        self.trusted_hosts = tuple(h.lower() for h in book.trusted_installer_hosts)
        self.triggers = _trigger_automaton(self.rules)
        hc = book.hidden_comments
        self.hidden_files = _compile(hc.files) if hc else None
        self.hidden_directive = _compile(hc.directive, re.IGNORECASE) if hc else None
        by_trigger: dict[str, list[int]] = {}
        for k, r in enumerate(self.rules):
            for t in r.triggers:
                by_trigger.setdefault(t, []).append(k)
        self.rules_by_trigger = {t: tuple(v) for t, v in by_trigger.items()}
        self.untriggered_rules = tuple(k for k, r in enumerate(self.rules) if not r.triggers)


def _trigger_automaton(rules: list[CompiledRule]) -> ahocorasick.Automaton | None:
    """One Aho-Corasick automaton over every rule's triggers: a file is scanned once for all of them, instead of
    once per trigger with str.find (screening small skills was dominated by those scans)."""
    words = sorted({t for r in rules for t in r.triggers})
    if not words:
        return None
    automaton = ahocorasick.Automaton()
    for w in words:
        automaton.add_word(w, w)
    automaton.make_automaton()
    return automaton


def load_rule_book(path: Path | None = None) -> CompiledBook:
    """Load, validate and compile a rule book (cached per path; the default is the packaged one)."""
    return _load(str(path.resolve()) if path is not None else _DEFAULT_KEY)


@lru_cache(maxsize=8)
def _load(path: str) -> CompiledBook:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        return CompiledBook(RuleBook.model_validate(raw))
    except (OSError, yaml.YAMLError, ValidationError, ValueError) as e:
        raise InputError(ReasonCode.INTERNAL_ERROR, f"screening rule book {path} is unusable: {e}") from e
