"""Rules, token rules, conventions and pitfalls: the sentences in which a skill says what must (not) be done.

A sentence is a rule when it carries a modal (must, never, always, should, do not, avoid, prefer … over) or when it
is an imperative item of a section whose title says it holds rules (Rules, Guidelines, Best practices, Checklist).
Pitfalls come from sections titled like gotchas / common mistakes / anti-patterns and from "Don't …" lines;
exclusions from sentences that exclude or skip something. All texts are the skill's own words, markup removed.
"""

from __future__ import annotations

import re

from skill2env_dagster.knowledge.source import Block, code_spans, plain, sentences
from skill2env_dagster.models.knowledge import Convention, Modality, Pitfall, Rule, TokenRule

_MODALS: list[tuple[Modality, re.Pattern[str]]] = [
    ("must_not", re.compile(r"\b(must not|mustn't|never|do not|don't|cannot|can't|shall not|may not|is not allowed|"
                            r"are not allowed|forbidden|prohibited)\b", re.I)),
    ("should_not", re.compile(r"\b(should not|shouldn't|avoid|refrain from)\b", re.I)),
    ("must", re.compile(r"\b(must|always|required|requires|shall|need to|needs to|has to|have to|make sure|ensure)\b",
                        re.I)),
    ("prefer", re.compile(r"\b(prefer|instead of|rather than|over)\b.*", re.I)),
    ("should", re.compile(r"\b(should|recommended|best practice)\b", re.I)),
]
RULE_SECTION = re.compile(r"\b(rules?|guidelines?|best practices?|principles?|requirements?|checklist|conventions?|"
                          r"standards?|do'?s and don'?ts|constraints?|policy|policies|style)\b", re.I)
PITFALL_SECTION = re.compile(r"\b(gotchas?|pitfalls?|mistakes?|anti-?patterns?|don'?ts|do not|avoid|caveats?|"
                             r"warnings?|red flags?|traps?|errors to avoid|what not to do|never)\b", re.I)
_EXCEPTION = re.compile(r"\b(?:except(?: for| when| if| in)?|unless|other than|apart from|excluding|"
                        r"with the exception of)\s+(.{3,90}?)(?:[.;,)]|$)", re.I)
_EXCLUSION = re.compile(r"\b(exclude[sd]?|excluding|skip(?:ped|s)?|ignore[sd]?|omit(?:ted|s)?|are not counted|"
                        r"do(?:es)? not count|not included|filtered out|drop(?:ped)?)\b", re.I)
_IMPERATIVE = re.compile(r"^(?:[A-Z][a-z]+)\b")
_REPLACE = [
    re.compile(r"`([^`]{1,60})`[^`.;]{0,30}\b(?:instead of|rather than|over|not)\b[^`.;]{0,20}`([^`]{1,60})`", re.I),
]
_REPLACE_REV = re.compile(r"(?:never|don't|do not|avoid)\b[^`.;]{0,30}`([^`]{1,60})`[^`.;]{0,40}\b(?:use|prefer)\b"
                          r"[^`.;]{0,20}`([^`]{1,60})`", re.I)
CONVENTIONS: list[tuple[str, re.Pattern[str]]] = [
    ("kebab_case", re.compile(r"\b(kebab[- ]case|hyphen[- ]case|lower-?case (?:letters?,? )?(?:numbers?|digits?)?,? "
                              r"(?:and )?hyphens|lowercase with hyphens|hyphen-separated)\b", re.I)),
    ("snake_case", re.compile(r"\bsnake[_ ]case\b", re.I)),
    ("camel_case", re.compile(r"\bcamel ?case\b", re.I)),
    ("pascal_case", re.compile(r"\bpascal ?case\b", re.I)),
    ("upper_snake", re.compile(r"\b(upper[_ ]snake[_ ]case|SCREAMING_SNAKE|UPPER_CASE|all caps constants?)\b", re.I)),
    ("iso_date", re.compile(r"\b(ISO[- ]?8601|YYYY-MM-DD)\b", re.I)),
    ("semver", re.compile(r"\b(semver|semantic version(?:ing)?|MAJOR\.MINOR\.PATCH)\b", re.I)),
    ("conventional_commit", re.compile(r"\bconventional commits?\b|\btype\(scope\)", re.I)),
    ("hex_color", re.compile(r"\bhex(?:adecimal)? colou?rs?\b|`#[0-9a-fA-F]{6}`", re.I)),
]


def modality(text: str) -> Modality | None:
    for name, rx in _MODALS:
        if rx.search(text):
            return name
    return None


def exception_clause(text: str) -> str:
    m = _EXCEPTION.search(text)
    return " ".join(m.group(0).split()).rstrip(".;,)") if m else ""


def _units(block: Block) -> list[str]:
    """The rule-sized pieces of a block: its sentences (a list item with one short sentence stays whole)."""
    if block.kind not in ("paragraph", "item"):
        return []
    return sentences(block.text)


def rules_in(block: Block) -> list[tuple[Rule, str]]:
    """Rule statements of one paragraph or list item, each with its raw Markdown sentence (for code spans)."""
    out = []
    in_rule_section = bool(RULE_SECTION.search(block.section))
    checklist = block.kind == "item" and bool(re.match(r"\s*\[[ xX]\]", block.text))
    for raw in _units(block):
        text = plain(re.sub(r"^\s*\[[ xX]\]\s*", "", raw))
        if not 12 <= len(text) <= 320 or text.endswith("?"):
            continue
        mod = modality(text)
        origin = "checklist" if checklist else "sentence"
        if mod is None and (checklist or (in_rule_section and block.kind == "item" and _IMPERATIVE.match(text))):
            mod, origin = "should", "checklist" if checklist else "rules_section"
        if mod is None:
            continue
        # `origin` is one of the two literals assigned just above; mypy widens the conditional expression to str.
        out.append((Rule(text=text, modality=mod, section=block.section, origin=origin,  # type: ignore[arg-type]
                         exception=exception_clause(text), tokens=code_spans(raw)[:6],
                         ref=block.doc.ref(block.line_of(text))), raw))
    return out


_VERB = (r"(?:use|uses|add|call|set|put|include|pass|write|commit|run|import|rely on|depend on|hard-?code|store|log|"
         r"return|expose|mix|nest|create|wrap|access|modify|edit|fall back to|invoke|send|print|leave|keep|apply|"
         r"specify|save|contain|start with|end with|prefix with|mark with|type|name)")
_FORBID = [
    re.compile(rf"\b(?:never|do not|don't|must not|mustn't|should not|shouldn't|cannot|can't|avoid)\s+(?:ever\s+)?"
               rf"(?:{_VERB}\s+)?(?:[\w-]+\s+){{0,2}}`([^`]{{1,60}})`", re.I),
    re.compile(r"`([^`]{1,60})`\s+(?:is|are)\s+(?:not allowed|forbidden|deprecated|banned|prohibited|not permitted)",
               re.I),
    re.compile(r"^\s*(?:no|never)\s+`([^`]{1,60})`", re.I),
]
_REQUIRE = re.compile(rf"\b(?:always|must|should|need to|be sure to|make sure to)\s+(?:also\s+)?{_VERB}\s+"
                      rf"(?:[\w-]+\s+){{0,2}}`([^`]{{1,60}})`", re.I)


def token_rules(rule: Rule, raw_text: str) -> list[TokenRule]:
    """Tokens a rule forbids, requires or wants replaced: only when the code span is the object of the rule's verb
    ("never use `X`", "always call `Y`", "use `A` instead of `B`"), not merely a span in a sentence with a modal."""
    out: list[TokenRule] = []
    for rx in _REPLACE:
        for m in rx.finditer(raw_text):
            good, bad = m.group(1).strip(), m.group(2).strip()
            if good != bad:
                out.append(TokenRule(polarity="replace", token=bad, replacement=good, text=rule.text,
                                     exception=rule.exception, ref=rule.ref))
    for m in _REPLACE_REV.finditer(raw_text):
        bad, good = m.group(1).strip(), m.group(2).strip()
        if good != bad and not any(t.token == bad for t in out):
            out.append(TokenRule(polarity="replace", token=bad, replacement=good, text=rule.text,
                                 exception=rule.exception, ref=rule.ref))
    if out:
        return out
    for rx in _FORBID:
        if found := rx.search(raw_text):
            return [TokenRule(polarity="forbid", token=found.group(1).strip(), text=rule.text, exception=rule.exception,
                              ref=rule.ref)]
    if req := _REQUIRE.search(raw_text):
        return [TokenRule(polarity="require", token=req.group(1).strip(), text=rule.text, exception=rule.exception,
                          ref=rule.ref)]
    return out


def conventions_in(block: Block) -> list[Convention]:
    out = []
    for raw in _units(block):
        text = plain(raw)
        for kind, rx in CONVENTIONS:
            m = rx.search(raw) or rx.search(text)
            if m:
                out.append(Convention(kind=kind, subject=_subject_before(text, m.start() if rx.search(text) else 0),
                                      text=text[:320], ref=block.doc.ref(block.line_of(text))))
    return out


def _subject_before(text: str, pos: int) -> str:
    """The noun phrase a convention is about: the words before the verb that precedes the convention name."""
    head = re.split(r"\b(?:must|should|are|is|use|uses|using|in|be|follow|follows)\b", text[:pos], flags=re.I)
    words = re.findall(r"[A-Za-z][A-Za-z_-]+", head[0] if head else "")
    return " ".join(words[-3:]).lower()


def pitfalls_in(block: Block) -> list[Pitfall]:
    """Warnings: everything in a pitfall section, plus do-not lines and exclusions anywhere."""
    out = []
    in_pitfalls = bool(PITFALL_SECTION.search(block.section))
    for raw in _units(block):
        text = plain(raw)
        if not 12 <= len(text) <= 320:
            continue
        if in_pitfalls or re.match(r"(?:don'?t|do not|never|avoid|common mistake|gotcha|pitfall)\b", text, re.I):
            kind = "pitfall"
        elif _EXCLUSION.search(text):
            kind = "exclusion"
        else:
            continue
        # `kind` is one of the literals assigned in the branches above; mypy widens it to str.
        out.append(Pitfall(text=text, kind=kind, section=block.section,  # type: ignore[arg-type]
                           ref=block.doc.ref(block.line_of(text))))
    return out
