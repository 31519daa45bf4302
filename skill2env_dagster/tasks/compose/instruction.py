"""instruction.md from typed slots: a natural request of 2–3 short paragraphs, shaped by persona, tone and
expertise, then checked — sentences well formed, no word salad (compose/grammar.py), no doubled words, no run of
eight words copied from the skill, no list lines, and every path it names either ships in the environment or is a
declared output."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from skill2env_dagster.reasons import ReasonCode, Skill2EnvError
from skill2env_dagster.tasks.compose.grammar import salad, with_article

MAX_WORDS = 420  # room to state every rule the verifier grades, with its conditions (issue 25)
COPY_RUN = 8  # this many consecutive words shared with the skill's prose is a paste, not a paraphrase
_ROLE = {
    "software_engineer": "on the engineering team", "platform_engineer": "looking after the platform",
    "site_reliability_engineer": "on call this week", "quality_engineer": "doing QA on this",
    "performance_engineer": "working on performance", "data_engineer": "maintaining the pipelines",
    "data_analyst": "putting together the numbers", "security_engineer": "on the security team",
    "security_auditor": "running the audit", "product_designer": "on the design team",
    "document_specialist": "keeping our documents in order", "technical_writer": "owning the docs",
    "researcher": "working on the study", "product_manager": "planning the release",
    "executive": "preparing tomorrow's briefing", "growth_marketer": "running the campaign",
    "game_developer": "on the game team", "support_engineer": "handling the support queue",
    "compliance_officer": "preparing the compliance review",
}
_PATH = re.compile(r"(?<![\w.])(/(?:app|srv|opt|var|etc|data|home)(?:/[\w.@+-]+)+/?)")


class InstructionError(Skill2EnvError):
    """The composed instruction failed its own checks (a creator bug, never shipped)."""


@dataclass
class Slots:
    """What an instruction must convey, as typed pieces; composition decides only the wording around them."""

    topic: str  # noun phrase: "the pre-release review of the snippet register"
    situation: str  # one or two sentences of context
    ask: str  # verb phrase, lower-case start, no final period: "check every record against those rules"
    inputs: str  # sentence naming the input paths
    guidance: str  # sentence naming the shipped notes (or "" when the task ships none)
    semantics: list[str]  # exact sentences: formats, grouping, ties, scope
    deliverable: str  # sentence naming the output path(s)
    constraints: list[str] = field(default_factory=list)
    hint: str = ""  # for novices
    example: str = ""  # one output line, for the example-driven tone
    outputs: list[str] = field(default_factory=list)  # declared output paths (may not exist before solving)
    context: str = ""  # the skill's method in a few of its own words (see compose/context.py)
    text: str = ""  # a finished instruction (compose/request.py) that replaces the composition from the slots


def join_words(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def role(persona: str) -> str:
    return _ROLE.get(persona, f"working as {with_article(persona.replace('_', ' '))}")


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def compose(s: Slots, persona: str, tone: str, expertise: str, seed: int) -> str:
    rng = random.Random(seed)
    sem = " ".join(s.semantics)
    guidance = f"{s.guidance} {s.context}".strip()
    cons = " ".join(s.constraints)
    hint = f" {s.hint}" if expertise == "novice" and s.hint else ""
    if tone == "first_person_ask":
        opener = rng.choice(["Hi!", "Hey,", "Quick favour:"])
        p1 = f"{opener} I'm {role(persona)} and could use a hand with {s.topic}. {s.situation} {s.inputs}"
        p2 = f"Could you {s.ask}? {guidance} {sem}"
        p3 = f"{s.deliverable} {cons}{hint}" + ("" if expertise == "expert" else " Thanks, I'll check the result.")
    elif tone == "imperative_brief":
        p1 = f"{_cap(s.ask)}. {s.situation} {s.inputs}"
        p2 = f"{guidance} {sem}"
        p3 = f"{s.deliverable} {cons}{hint}"
    elif tone == "ticket_snippet":
        p1 = f"Ticket OPS-{rng.randint(1000, 9999)}: {s.topic} (raised by someone {role(persona)}). {s.situation} " \
             f"{s.inputs}"
        p2 = f"Requested: {s.ask}. {guidance} {sem}"
        p3 = f"Done means: {s.deliverable[:1].lower()}{s.deliverable[1:]} {cons}{hint}"
    else:  # example_driven
        p1 = f"I'm {role(persona)} and need you to {s.ask}. {s.situation} {s.inputs}"
        p2 = f"{guidance} {sem} {s.deliverable}"
        example = f"For illustration only, one line of the result could look like `{s.example}`." if s.example else ""
        p3 = f"{example} {cons}{hint}"
    paras = [p1, p2, p3] if expertise != "expert" or tone == "example_driven" else [p1, f"{p2} {p3}"]
    paras = [" ".join(p.split()) for p in paras if p.split()]
    return "\n\n".join(paras) + "\n"


def copy_words(text: str) -> list[str]:
    """The words the copy check compares (code spans and quotations in “…” left out: quoting the skill's rule is
    citing it; 'YYYY-MM-DD' is three words)."""
    return re.findall(r"[a-z0-9']+", re.sub(r"`[^`]*`|“[^”]*”", " ", text.lower()))


def _shingles(text: str, n: int = COPY_RUN) -> set[tuple[str, ...]]:
    words = copy_words(text)
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def problems(text: str, *, env_paths: Iterable[str], outputs: Iterable[str], skill_text: str) -> list[str]:
    """Why an instruction is not fit to ship; empty when it is."""
    out: list[str] = []
    paras = [p for p in text.split("\n\n") if p.strip()]
    if not 2 <= len(paras) <= 3:
        out.append(f"{len(paras)} paragraphs (want 2–3)")
    if len(text.split()) > MAX_WORDS:
        out.append(f"{len(text.split())} words (limit {MAX_WORDS})")
    if any(re.match(r"\s*([-*+]|\d+[.)])\s", ln) for ln in text.splitlines()):
        out.append("a list line (an instruction is prose)")
    if m := re.search(r"\b(\w+) \1\b", re.sub(r"`[^`]*`", " ", text), re.I):
        out.append(f"doubled word {m.group(0)!r}")
    for p in paras:
        for sentence in re.split(r"(?<=[.!?])\s+", p.strip()):
            if sentence and not re.match(r"[A-Z0-9`/\"(“‘]", sentence):
                out.append(f"sentence starts badly: {sentence[:40]!r}")
            if sentence and not re.search(r"[.!?:)`”’]$", sentence):
                out.append(f"sentence does not end: {sentence[-40:]!r}")
    out += salad(text)
    copied = _shingles(text) & _shingles(skill_text)
    if copied:
        out.append(f"copies the skill: {' '.join(sorted(copied)[0])!r}")
    known = {p.rstrip("/") for p in env_paths} | {p.rstrip("/") for p in outputs}
    for path in _PATH.findall(text):
        clean = path.rstrip("/.")
        if clean not in known:
            out.append(f"names {clean}, which is neither in the environment nor a declared output")
    return out


def check(text: str, *, env_paths: Iterable[str], outputs: Iterable[str], skill_text: str) -> str:
    found = problems(text, env_paths=env_paths, outputs=outputs, skill_text=skill_text)
    if found:
        raise InstructionError(ReasonCode.CREATOR_CONTRACT_FAILED, "instruction: " + "; ".join(found))
    return text


def container_paths(env_files: Iterable[str], extra_dirs: Iterable[str] = ()) -> set[str]:
    """Every container path the environment provides: files under environment/app… map to /app/…, plus their
    parent folders and folders the Dockerfile creates."""
    out: set[str] = set(extra_dirs)
    for rel in env_files:
        if not rel.startswith("app/"):
            continue
        path = "/" + rel
        out.add(path)
        parts = path.split("/")
        out.update("/".join(parts[:i]) for i in range(2, len(parts)))
    return out
