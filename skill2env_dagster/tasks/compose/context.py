"""One sentence that places a request in the skill's method, in the skill's own short terms: which procedure
(from its first to its last step), which table (what it maps, a few of its keys), which template (its first and
last sections), which rules (what they concern: a subject only when it is a complete noun phrase the rule wrote
(compose/grammar.py), else the rule quoted when it is shorter than a pasted run, else nothing). Phrases are cut to a
few words, so the sentence names the method without pasting it; the rules' exact wording stays in the shipped
notes."""

from __future__ import annotations

import re

from skill2env_dagster.models.blueprint import Predicate
from skill2env_dagster.tasks.compose.grammar import as_written, noun_phrase_problem
from skill2env_dagster.tasks.compose.instruction import COPY_RUN, copy_words, join_words

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


def _code(token: str) -> str:
    """A code token as a noun phrase: 'the `lower()` call', 'the `--help` flag'; '' for a plain token (those are
    grouped as 'the use of `A` and `B`')."""
    if token.endswith(")"):
        return f"the `{token}` call"
    return f"the `{token}` flag" if token.startswith("-") else ""


def _concern(p: Predicate) -> str:
    """What one entry rule concerns, as a noun phrase: its subject when that is a complete noun phrase the rule
    wrote, else the rule quoted when it is short enough to quote, else '' (the sentence leaves it out)."""
    if p.params.get("token"):
        return _code(str(p.params["token"]))
    if p.subject and not noun_phrase_problem(p.subject, p.statement):
        return as_written(p.subject, p.statement)
    rule = p.statement.strip(" .")
    if len(copy_words(rule)) < COPY_RUN - 1 and not re.search(r"[`*\[\]“”\"]", rule):
        return f"the rule “{rule}”"
    return ""


def method_context(preds: list[Predicate]) -> str:
    """The sentence, or '' when nothing useful can be said in a few words."""
    parts = [x for x in (_one(p) for p in preds) if x]
    entries = [p for p in preds if p.kind not in ("order", "coverage", "lookup", "sections")]
    concerns = [c for p in entries if (c := _concern(p))]
    plain = [f"`{p.params['token']}`" for p in entries if p.params.get("token") and not _code(str(p.params["token"]))]
    concerns += [f"the use of {join_words(list(dict.fromkeys(plain)))}"] if plain else []
    if concerns:
        parts.append(f"the rules in play concern {join_words(list(dict.fromkeys(concerns)))}")
    if not parts:
        return ""
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."
