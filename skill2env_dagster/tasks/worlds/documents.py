"""The document world: deliverables that must follow one of the skill's output templates — its sections, in its
order, with its labelled fields — filled with a case's notes (authoring) or restored from drafts whose sections
are missing, misordered or renamed (repair). Notes carry numbers and names so every placement is checkable."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from skill2env_dagster.models.blueprint import Predicate

NONE_BODY = "None."


def heading_key(text: str) -> str:
    """How headings are compared: markup, case and surrounding spaces do not matter."""
    return re.sub(r"\s+", " ", re.sub(r"[*_`#]", "", text)).strip().lower()


@dataclass
class Note:
    section: str  # template heading it belongs under
    text: str  # a sentence with a unique token (a number or a code) the verifier looks for
    token: str


@dataclass
class DocCase:
    id: str
    notes: list[Note]
    fields: dict[str, str]  # template field -> value


@dataclass
class DocWorld:
    pred: Predicate
    headings: list[str]
    fields: list[str]
    cases: list[DocCase]
    drafts: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # case -> [(heading as written, body)]


def _note(section: str, words: list[str], rng: random.Random, serial: int) -> Note:
    token = f"{rng.choice(['REF', 'ID', 'NO', 'TKT', 'ITEM'])}-{1000 + serial * 37 + rng.randint(0, 30)}"
    a, b, c = rng.sample(words, 3) if len(words) >= 3 else (words * 3)[:3]
    text = rng.choice([f"{a.capitalize()} {b} noted for {c} under {token}.",
                       f"Track {token}: {a} and {b} still affect {c}.",
                       f"{token} shows the {a} {b} issue around {c}."])
    return Note(section, text, token)


def build(pred: Predicate, n_cases: int, rng: random.Random, words: list[str], notes_per_case: int) -> DocWorld:
    headings = list(pred.params["headings"])
    fields = [f for f in pred.params.get("fields", []) if re.fullmatch(r"[A-Za-z][A-Za-z /&-]{1,30}", f)][:4]
    pool = [w for w in words if re.fullmatch(r"[a-z]{3,12}", w)] or ["update", "service", "customer", "report"]
    cases = []
    serial = 0
    for i in range(n_cases):
        chosen = rng.sample(headings, min(len(headings) - 1, notes_per_case))
        notes = []
        for h in chosen:
            serial += 1
            notes.append(_note(h, pool, rng, serial))
        values = {f: f"{rng.choice(pool)}-{rng.randint(10, 99)}" for f in fields}
        cases.append(DocCase(f"case-{i + 1:02d}", notes, values))
    return DocWorld(pred, headings, fields, cases)


def render(world: DocWorld, case: DocCase, level: int = 2) -> str:
    """The correct document for a case: every template section in order, its notes or None."""
    lines = [f"# {case.id}", ""]
    for f in world.fields:
        lines.append(f"**{f}:** {case.fields[f]}")
    if world.fields:
        lines.append("")
    for h in world.headings:
        lines += [f"{'#' * level} {h}", ""]
        body = [n.text for n in case.notes if n.section == h]
        lines += body or [NONE_BODY]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def damage(world: DocWorld, rng: random.Random) -> None:
    """Drafts for the repair shape: each loses, moves or renames a section (bodies kept verbatim)."""
    for k, case in enumerate(world.cases):
        sections = [(h, "\n".join([n.text for n in case.notes if n.section == h] or [NONE_BODY]))
                    for h in world.headings]
        kind = ["missing", "swapped", "renamed", "swapped_missing"][k % 4]
        if kind in ("missing", "swapped_missing"):
            empty = [i for i, (h, b) in enumerate(sections) if b == NONE_BODY] or [len(sections) - 1]
            sections.pop(rng.choice(empty))
        if kind in ("swapped", "swapped_missing") and len(sections) >= 2:
            i = rng.randrange(len(sections) - 1)
            sections[i], sections[i + 1] = sections[i + 1], sections[i]
        if kind == "renamed":
            i = rng.randrange(len(sections))
            h, b = sections[i]
            sections[i] = (h.upper() if h.upper() != h else h.lower() + " notes", b)
        world.drafts[case.id] = sections
