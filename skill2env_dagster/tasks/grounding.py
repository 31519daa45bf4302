"""What a task borrows from its skill: vocabulary, reference tables, commands, headings, API endpoints.

The offline generator must not be "a template with the name swapped": fixtures are derived from the skill's own
tables/CSV/JSON when it has them, and every synthesised value is drawn from the skill's own vocabulary, so the
retrieval probe can trace a task back to its skill. The skill is hostile input: we only read text, never run it.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from skill2env_dagster.models.skill import SkillRecord

_MAX_READ = 200_000  # bytes read per skill file; larger files are skipped
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{3,23}")
_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)
_ENDPOINT = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE)\s+(/[A-Za-z0-9_./{}:-]*)")
_EXTRA_NOISE = {
    "skill", "skills", "using", "use", "used", "user", "users", "file", "files", "example", "examples", "should",
    "would", "could", "must", "when", "with", "this", "that", "your", "will", "make", "sure", "need", "needs",
    "also", "like", "just", "into", "only", "each", "then", "true", "false", "none", "null", "http", "https",
    "claude", "agent", "tool", "tools", "description", "name", "references", "reference", "always", "never",
}


@lru_cache(maxsize=1)
def _noise() -> frozenset[str]:
    """English stop words plus skill boilerplate (scikit-learn's list, imported on first use: it costs seconds)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | _EXTRA_NOISE


@dataclass
class Table:
    """A small reference table: header + rows of strings (from a CSV file, a csv/markdown block, or JSON)."""

    columns: list[str]
    rows: list[list[str]]
    origin: str

    def numeric_columns(self) -> list[int]:
        return [i for i in range(len(self.columns)) if all(_is_number(r[i]) for r in self.rows)]

    def text_columns(self) -> list[int]:
        return [i for i in range(len(self.columns)) if i not in self.numeric_columns()]


@dataclass
class Grounding:
    """Everything the offline recipes may draw on; deterministic for a given skill."""

    skill_name: str
    vocabulary: list[str]
    headings: list[str]
    tables: list[Table]
    commands: list[str]
    endpoints: list[tuple[str, str]]
    json_objects: list[dict]
    file_names: list[str] = field(default_factory=list)

    def words(self, n: int, rng: random.Random, exclude: set[str] | None = None) -> list[str]:
        """n distinct vocabulary words (padding with neutral words only when the skill is tiny)."""
        pool = [w for w in self.vocabulary if w not in (exclude or set())]
        pool += [w for w in _PAD if w not in pool and w not in (exclude or set())]
        return rng.sample(pool[: max(n, 24)], n)


_PAD = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]


def _is_number(text: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(\.\d+)?", text.strip()))


def _clean_cell(text: str) -> str:
    return re.sub(r"[`*_|,\t\"]", "", text).strip()[:40]


def _skill_texts(skill: SkillRecord) -> list[tuple[str, str]]:
    """(rel_path, text) of the skill's readable text files, SKILL.md first."""
    out = [(skill.skill_file, skill.body)]
    root = Path(skill.abs_path)
    for entry in skill.files:
        if entry.kind != "text" or entry.refused or entry.size > _MAX_READ or entry.rel_path == skill.skill_file:
            continue
        try:
            out.append((entry.rel_path, (root / entry.rel_path).read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return out


def vocabulary(texts: list[str], limit: int = 60) -> list[str]:
    """Most frequent distinctive words, lower-cased, in a stable order (count desc, then alphabetical)."""
    counts: Counter[str] = Counter()
    for text in texts:
        for w in _WORD.findall(_FENCE.sub(" ", text)):
            lw = w.lower().strip("-_")
            if lw not in _noise() and not lw.isdigit() and re.fullmatch(r"[a-z][a-z0-9]+", lw):
                counts[lw] += 1
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def markdown_tables(text: str, origin: str) -> list[Table]:
    tables: list[Table] = []
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.strip().startswith("|"):
            block.append(line.strip())
            continue
        if len(block) >= 4 and re.fullmatch(r"\|?[\s:|-]+\|?", block[1]):
            cells = [[_clean_cell(c) for c in row.strip("|").split("|")] for row in block]
            width = len(cells[0])
            rows = [r for r in cells[2:] if len(r) == width and all(r)]
            if width >= 2 and len(rows) >= 2 and all(cells[0]):
                tables.append(Table(cells[0], rows[:40], origin))
        block = []
    return tables


def csv_tables(text: str, origin: str) -> list[Table]:
    try:
        rows = [[_clean_cell(c) for c in r] for r in csv.reader(io.StringIO(text)) if r]
    except csv.Error:
        return []
    if len(rows) < 3 or len(rows[0]) < 2:
        return []
    width = len(rows[0])
    body = [r for r in rows[1:] if len(r) == width and all(r)]
    return [Table(rows[0], body[:40], origin)] if len(body) >= 2 and all(rows[0]) else []


def _json_objects(text: str) -> list[dict]:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if isinstance(obj, dict):
        return [obj]
    return [o for o in obj if isinstance(o, dict)][:20] if isinstance(obj, list) else []


def ground(skill: SkillRecord) -> Grounding:
    """Read the skill's texts once and pull out the facts the recipes use."""
    texts = _skill_texts(skill)
    tables: list[Table] = []
    commands: list[str] = []
    objects: list[dict] = []
    for rel, text in texts:
        if rel.endswith(".csv"):
            tables += csv_tables(text, rel)
        elif rel.endswith(".json"):
            objects += _json_objects(text)
        elif rel.endswith(".md"):
            tables += markdown_tables(text, rel)
        for lang, code in _FENCE.findall(text):
            if lang in ("csv",):
                tables += csv_tables(code, rel)
            elif lang == "json":
                objects += _json_objects(code)
            elif lang in ("bash", "sh", "shell", "console", ""):
                commands += [ln.strip().lstrip("$ ") for ln in code.splitlines() if re.match(r"^\$?\s*[a-z]", ln)]
    all_text = "\n".join(t for _, t in texts)
    return Grounding(
        skill_name=skill.name or skill.skill_id,
        vocabulary=vocabulary([skill.description or ""] * 3 + [t for _, t in texts]),
        headings=[h.strip() for h in re.findall(r"^#{2,3}\s+(.+)$", skill.body, re.M)][:20],
        tables=[t for t in tables if 2 <= len(t.columns) <= 8],
        commands=[c[:120] for c in dict.fromkeys(commands)][:20],
        endpoints=list(dict.fromkeys(_ENDPOINT.findall(all_text)))[:20],
        json_objects=objects[:20],
        file_names=[f.rel_path for f in skill.files][:50],
    )
