"""Loads and validates the screening rule book (data/screening_rules.yaml) into compiled, typed rules.

The rules themselves live only in the YAML file so that a reviewer reads one place; this module just checks that
every regex compiles and every code is a known ReasonCode, so a typo in the rule book fails loudly at load time
instead of silently never matching.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

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
    weight: float = Field(default=1.0, ge=-1.0, le=2.0, description="Contribution to the code's score; a negative "
                          "weight is counter-evidence (lowers the score, never reported as a finding); a weight "
                          "above 1 is conclusive even from a supporting file (scoring.<code>.other_files).")
    quotable: bool = Field(default=False, description="Hits quoted in a detection context are ignored.")
    prose_only: bool = Field(default=False, description="Only Markdown/text files are searched: a directive to the "
                                                         "agent is prose it reads, not a code comment or string.")
    case_sensitive: bool = False
    trusted_hosts: bool = Field(default=False, description="Hits whose URL host is a trusted installer are ignored.")
    unless: str | None = Field(default=None, description="A hit is ignored when its line matches this regex.")
    unless_skill: str | None = Field(default=None, description="The rule is off for a skill whose name or description "
                                     "matches this regex (a skill that builds MCP servers does not depend on one).")
    unless_body: str | None = Field(default=None, description="The rule is off for a skill whose SKILL.md says this "
                                    "anywhere (a skill that states it still works without its connectors uses them "
                                    "as optional sources).")
    near: list[str] = Field(default_factory=list, description="Each regex must match within near_window lines.")
    unless_near: str | None = Field(default=None, description="A hit is ignored when this regex matches within "
                                    "near_window lines (a Linux alternative next to a macOS command: one platform "
                                    "among several, not a requirement).")
    near_window: int = Field(default=0, ge=0, le=20)
    triggers: list[str] = Field(default_factory=list, description="Lower-case substrings, one of which every match "
                                "contains; only lines holding one are searched.")
    also_codes: list[ReasonCode] = Field(default_factory=list, description="Codes the same hit is also evidence "
                                         "for, with the same weight (one search, several verdicts).")
    under_heading: str | None = Field(default=None, description="A hit counts only on a line whose section (the "
                                      "Markdown headings above it, joined) matches this regex.")
    identity_context: bool = Field(default=True, description="Quotable rules: a skill whose own name/description "
                                   "declares a defensive purpose quotes attack text in code/tables/lists as "
                                   "patterns. Off for rules whose hits are never mere patterns in SKILL.md or "
                                   "code; such a skill's supporting documents are patterns for every rule.")

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

    @field_validator("also_codes")
    @classmethod
    def _line_codes(cls, v: list[ReasonCode]) -> list[ReasonCode]:
        for c in v:
            cls._line_code(c)
        return v

    def compiled(self) -> CompiledRule:
        flags = 0 if self.case_sensitive else re.IGNORECASE
        return CompiledRule(
            rule=self,
            rx=_compile(self.pattern, flags | re.MULTILINE),
            unless=_compile(self.unless, re.IGNORECASE) if self.unless else None,
            unless_skill=_compile(self.unless_skill, re.IGNORECASE) if self.unless_skill else None,
            unless_body=_compile(self.unless_body, re.IGNORECASE | re.MULTILINE) if self.unless_body else None,
            near=tuple(_compile(n, re.IGNORECASE) for n in [*self.near, *_absent(self.unless_near)]),
            under_heading=_compile(self.under_heading, re.IGNORECASE) if self.under_heading else None,
        )


def _absent(pattern: str | None) -> list[str]:
    """`unless_near` as one more `near` regex: it matches a window only where `pattern` matches nowhere in it."""
    return [] if pattern is None else [rf"\A(?![\s\S]*(?:{pattern}))"]


class CompiledRule:
    """A rule with its regexes compiled once per process."""

    __slots__ = ("near", "rule", "rx", "triggers", "under_heading", "unless", "unless_body", "unless_skill")

    def __init__(self, rule: Rule, rx: re.Pattern[str], unless: re.Pattern[str] | None,
                 near: tuple[re.Pattern[str], ...], unless_skill: re.Pattern[str] | None = None,
                 under_heading: re.Pattern[str] | None = None, unless_body: re.Pattern[str] | None = None) -> None:
        self.rule, self.rx, self.unless, self.near, self.unless_skill = rule, rx, unless, near, unless_skill
        self.under_heading, self.unless_body = under_heading, unless_body
        self.triggers = tuple(rule.triggers)


class ContextSpec(_Strict):
    window: int = Field(ge=0, le=30)
    detection_headings: str
    detection_cues: str
    reassurance: str
    fixture_paths: str
    data_files: str
    pattern_paths: str = Field(default="(?!)", description="A defensive skill's signature modules (patterns.js, "
                               "rules/, signatures.py): pattern data even when they are code.")
    defensive_identity: str = Field(description="A skill whose name/description matches declares a detection, "
                                    "defence or teaching purpose (see Rule.identity_context).")
    instruction_headings: str = Field(description="Sections that instruct (setup, prerequisites, installation): "
                                      "a defensive identity never turns text there into a quotation.")
    code_files: str = Field(description="Executable code (scripts the agent may run). Other supporting files - docs, "
                            "references, Dockerfiles, configs - weigh scoring.<code>.doc_files when a code sets it.")
    setup_scripts: str = Field(description="Scripts that install or set up the skill's tools (install.sh, "
                               "setup.py...): SKILL.md naming one does not make its downloads the workflow's service.")
    side_channel: str = Field(description="An alert or notification channel: account and live-service evidence on "
                              "such a line, in such a section or just below such a comment belongs to an optional "
                              "side channel, not to the main workflow.")
    side_channel_skill: str = Field(description="A skill whose frontmatter name matches is about messaging or "
                                    "notifications: for it the side channel is the workflow.")
    example_mention: str = Field(description="What precedes a product named as an illustration on its line "
                                 "(`e.g. Shopify`, `such as Datadog`, `如Shopify`): an example, not a requirement "
                                 "(vocabulary body mentions; searched on the line up to the term).")
    example_line: str = Field(description="A usage example sentence (`**Example:** ...`): products it names "
                              "illustrate, they are not requirements (vocabulary body mentions).")


class CodeScoring(_Strict):
    threshold: float = Field(gt=0)
    other_files: float = Field(ge=0, le=1.0, description="Weight of hits outside SKILL.md.")
    doc_files: float | None = Field(default=None, ge=0, le=1.0, description="Weight of hits in supporting files that "
                                    "are not code (context.code_files); None: other_files for every file.")
    other_files_cap: float | None = Field(default=None, ge=0, description="Most that evidence found only outside "
                                          "SKILL.md may add to the score (None: no cap).")
    implies: list[ReasonCode] = Field(default_factory=list, description="Codes that follow from this one: when it "
                                      "is reached, its evidence is reported for these codes too.")


class RequirementRule(_Strict):
    """A stated requirement in the frontmatter (`requires.env`, `metadata.<hub>.requires.mcp`, ...) of one kind
    whose item (env var name, MCP server, binary) matches `name`."""

    id: str = Field(pattern=r"^[a-z]+\.[a-z0-9_]+$")
    code: ReasonCode
    kind: Literal["env", "mcp", "bins", "os"]
    name: str
    unless_any: str | None = Field(default=None, description="The rule is off when any stated item of its kind "
                                                             "matches this regex (an OS list that includes linux).")
    weight: float = Field(gt=0, le=1.0)
    description: str


class RequirementsSpec(_Strict):
    description: str
    kinds: dict[Literal["env", "mcp", "bins", "os"], str] = Field(description="Regex on a frontmatter key: its values "
                                                                  "are requirement items of that kind.")
    lists_as: Literal["env", "mcp", "bins"] = Field(description="Kind of a bare list under a `requires` key.")
    requires_key: str = Field(description="Keys holding requirements (`requires`, `requirements`).")
    optional_key: str = Field(description="Keys whose subtree is optional and ignored.")
    rules: list[RequirementRule]


class VocabularyFamily(_Strict):
    """A family of products or devices (messaging apps, SaaS, smart-home hubs...) and what naming one shows."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    codes: list[ReasonCode] = Field(min_length=1)
    description: str
    terms: list[str] = Field(default_factory=list, description="Names, matched case-insensitively as whole words.")
    bins: list[str] = Field(default_factory=list, description="CLIs of the family (frontmatter requires.bins).")
    identity_weight: float = Field(default=0.0, ge=0, le=1.0, description="A term in the skill's name/description.")
    body_weight: float = Field(default=0.0, ge=0, le=1.0, description="A term on a body line that `body_near` "
                               "also matches (within body_window lines).")
    body_near: str | None = None
    body_window: int = Field(default=0, ge=0, le=10)
    bins_weight: float = Field(default=0.0, ge=0, le=1.0, description="A required binary of the family.")
    unless_skill: str | None = Field(default=None, description="The family is off for a skill whose name or "
                                     "description matches (a skill drawing circuit diagrams needs no board).")
    command_weight: float = Field(default=0.0, ge=0, le=1.0, description="A shell command line starting with one "
                                  "of the family's binaries.")


class LureShapeSpec(_Strict):
    """The download-and-run lure as a whole: element regexes that must co-occur within `window` lines."""

    rule_id: str = Field(pattern=r"^[a-z]+\.[a-z0-9_]+$")
    description: str
    window: int = Field(ge=1, le=40)
    elements: dict[str, str]
    triggers: dict[str, list[str]] = Field(default_factory=dict, description="Lower-case substrings one of which "
                                           "every match of an element contains: an element whose triggers are all "
                                           "absent is not searched.")
    need_all: list[str]
    need_any: list[str]


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
    fragments: dict[str, str] = Field(default_factory=dict, description="Named regex fragments, already substituted "
                                      "wherever `{{name}}` stood (kept for the record and for code that shares them).")
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
    requirements: RequirementsSpec
    vocabulary: list[VocabularyFamily]
    lure_shape: LureShapeSpec

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
        self.pattern_paths = _compile(ctx.pattern_paths)
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
        self.defensive_identity = _compile(ctx.defensive_identity)
        self.instruction_headings = _compile(ctx.instruction_headings)
        self.code_files = _compile(ctx.code_files)
        self.setup_scripts = _compile(ctx.setup_scripts)
        self.side_channel = _compile(ctx.side_channel)
        self.side_channel_skill = _compile(ctx.side_channel_skill)
        self.example_line = _compile(ctx.example_line)
        self.example_mention = _compile(ctx.example_mention)
        req = book.requirements
        self.requirement_kinds = {kind: _compile(rx) for kind, rx in req.kinds.items()}
        self.requires_key = _compile(req.requires_key)
        self.optional_key = _compile(req.optional_key)
        self.requirement_rules = [(r, _compile(r.name), _compile(r.unless_any) if r.unless_any else None)
                                  for r in req.rules]
        self.vocabulary = [CompiledFamily(f) for f in book.vocabulary]
        self.vocabulary_terms = TermIndex({t for f in book.vocabulary for t in f.terms})
        self.all_bins = frozenset(b for f in self.vocabulary for b in f.bins)
        lure = book.lure_shape
        unknown = (set(lure.need_all) | set(lure.need_any)) - set(lure.elements)
        if unknown:
            raise ValueError(f"lure_shape needs undefined elements {sorted(unknown)}")
        self.lure_elements = {name: _compile(rx, re.IGNORECASE) for name, rx in lure.elements.items()}
        codes = {c for r in book.rules for c in [r.code, *r.also_codes]} | {r.code for r in req.rules} | \
            {c for f in book.vocabulary for c in f.codes}
        missing = codes - set(book.scoring)
        if missing:
            raise ValueError(f"no scoring entry for codes {sorted(c.value for c in missing)}")


class TermIndex:
    """Whole-word, case-insensitive search for many terms in one Aho-Corasick pass (a regex alternation of a few
    hundred terms with word-boundary lookarounds was the slowest step of screening). CJK terms match anywhere."""

    def __init__(self, terms: set[str]) -> None:
        self.terms = {t.lower(): t for t in terms}
        self.automaton: ahocorasick.Automaton | None = None
        if terms:
            self.automaton = ahocorasick.Automaton()
            for low in self.terms:
                self.automaton.add_word(low, low)
            self.automaton.make_automaton()

    def find(self, text: str) -> list[tuple[int, str]]:
        """(start offset, lower-cased term) of every whole-word occurrence, in text order."""
        if self.automaton is None:
            return []
        low = text.lower()
        if len(low) != len(text):  # lower-casing changed lengths: offsets would drift, search the safe way
            low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
        out = []
        for end, term in self.automaton.iter(low):
            start = end - len(term) + 1
            if term.isascii() and (_word_char(low, start - 1) or _word_char(low, end + 1)):
                continue
            out.append((start, term))
        out.sort()
        return out


def _word_char(text: str, i: int) -> bool:
    """An ASCII word character: a CJK character next to an English term ("CUPS协议") is a boundary."""
    return 0 <= i < len(text) and text[i].isascii() and (text[i].isalnum() or text[i] in "_-")


class CompiledFamily:
    """One vocabulary family with its terms and binaries, compiled once."""

    def __init__(self, family: VocabularyFamily) -> None:
        self.family = family
        self.terms = frozenset(t.lower() for t in family.terms)
        self.bins = frozenset(b.lower() for b in family.bins)
        self.body_near = _compile(family.body_near, re.IGNORECASE) if family.body_near else None
        self.unless_skill = _compile(family.unless_skill, re.IGNORECASE) if family.unless_skill else None



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
        return CompiledBook(RuleBook.model_validate(_read(path)))
    except (OSError, yaml.YAMLError, ValidationError, ValueError) as e:
        raise InputError(ReasonCode.INTERNAL_ERROR, f"screening rule book {path} is unusable: {e}") from e


_FRAGMENT_REF = re.compile(r"\{\{([^{}\n]*)\}\}")  # any {{...}}: a misspelt name fails loudly


def _read(path: str) -> dict[str, Any]:
    """The rule book as data, with every `{{name}}` replaced by its fragment (once, before validation)."""
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError("the rule book is not a mapping")
    frags = resolve_fragments(raw.get("fragments") or {})
    out = {k: v if k == "fragments" else _substitute(v, frags, k) for k, v in raw.items()}
    out["fragments"] = frags
    return out


def resolve_fragments(defined: object) -> dict[str, str]:
    """The book's `fragments:` mapping, each value with the fragments it uses substituted (in any order; a
    fragment that uses itself, directly or through others, is an error)."""
    if not isinstance(defined, dict):
        raise ValueError("fragments must be a mapping of name to regex text")
    for name, text in defined.items():
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name) or not isinstance(text, str):
            raise ValueError(f"fragment {name!r}: names are lower_case_words and values regex text")
    frags: dict[str, str] = {}

    def resolve(name: str, using: tuple[str, ...]) -> str:
        if name not in frags:
            if name in using:
                raise ValueError(f"fragment {{{{{name}}}}} uses itself ({' -> '.join([*using, name])})")
            needed = sorted({m.group(1) for m in _FRAGMENT_REF.finditer(defined[name])} - set(defined))
            if needed:
                raise ValueError(f"unknown fragment {{{{{needed[0]}}}}} in fragments.{name} (the book defines: "
                                 f"{', '.join(sorted(defined))})")
            uses = {m.group(1) for m in _FRAGMENT_REF.finditer(defined[name])}
            frags[name] = _substitute(defined[name], {n: resolve(n, (*using, name)) for n in uses}, "")
            _compile(frags[name])
        return frags[name]

    for name in defined:
        resolve(name, ())
    return {name: frags[name] for name in defined}


def _substitute(value: Any, frags: dict[str, str], where: str) -> Any:
    """`value` (any YAML node) with `{{name}}` replaced by fragment `name`; an unknown name is an error."""
    if isinstance(value, str):
        def one(m: re.Match[str]) -> str:
            if m.group(1) not in frags:
                raise ValueError(f"unknown fragment {m.group(0)} in {where} (the book defines: "
                                 f"{', '.join(sorted(frags)) or 'none'})")
            return frags[m.group(1)]
        return _FRAGMENT_REF.sub(one, value)
    if isinstance(value, list):
        return [_substitute(v, frags, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _substitute(v, frags, f"{where}.{k}") for k, v in value.items()}
    return value


@lru_cache(maxsize=1)
def book_fragments() -> dict[str, str]:
    """The packaged rule book's named regex fragments, resolved (for code outside the book that needs the same
    definition, e.g. the learned opinion's evidence anchor); reads the YAML only, compiles no rule."""
    raw = yaml.safe_load(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))
    return resolve_fragments(raw.get("fragments") or {})
