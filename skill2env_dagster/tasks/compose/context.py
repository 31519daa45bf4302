"""One sentence that places a request in the skill's method, in the skill's own short terms: which procedure
(from its first to its last step), which table (what it maps, a few of its keys), which template (its first and
last sections), which rules (what they concern). Phrases are cut to a few words, so the sentence names the method
without pasting it; the rules' exact wording stays in the shipped notes."""

from __future__ import annotations

import re

from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.tasks.compose.instruction import join_words

MAX_WORDS = 5


def short(text: str, n: int = MAX_WORDS) -> str:
    # Markdown markup only: an underscore inside a word is part of a name (molar_masses.json), not emphasis.
    words = re.sub(r"[`*\[\]]|(?<!\w)_+|_+(?!\w)", "", text).split()
    out = " ".join(words[:n]).strip(" .,;:")
    return out + ("…" if len(words) > n else "")


def _one(p: Predicate) -> str:
    k = p.params
    if p.kind in ("order", "coverage"):
        steps = k.get("steps") or []
        return (f"it has {len(steps)} parts, from “{short(steps[0])}” to “{short(steps[-1])}”") if steps else ""
    if p.kind == "lookup":
        cols, rows = k["columns"], k["rows"]
        keys = join_words([f"“{short(r[k['key']], 3)}”" for r in rows[:3]])
        return f"it maps {short(cols[k['key']], 3)} (such as {keys}) to {short(cols[k['value']], 3)}"
    if p.kind == "sections":
        heads = k.get("headings") or []
        return f"its headings run from “{short(heads[0])}” to “{short(heads[-1])}”" if heads else ""
    return ""


def method_context(preds: list[Predicate]) -> str:
    """The sentence, or '' when nothing useful can be said in a few words."""
    parts = [x for x in (_one(p) for p in preds) if x]
    subjects = [short(p.subject, 4) for p in preds if p.kind not in ("order", "coverage", "lookup", "sections")
                and p.subject and p.subject != "code"]
    tokens = [f"`{p.params['token']}`" for p in preds if p.params.get("token")]
    if subjects or tokens:
        what = join_words(list(dict.fromkeys(subjects)) + (["the use of " + join_words(tokens)] if tokens else []))
        parts.append(f"the rules in play concern {what}")
    if not parts:
        return ""
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."
