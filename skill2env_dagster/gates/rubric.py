"""tests/rubric.md shape: exactly the sections Must-do, Must-avoid, Best-practice, each with 1–3 bullets."""

from __future__ import annotations

import re

SECTIONS = ("must-do", "must-avoid", "best-practice")
MAX_BULLETS = 3
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^[-*+]\s+\S")


def _section_key(title: str) -> str:
    """'Must do', 'MUST-DO:' and 'Must-do' all name the same section."""
    return re.sub(r"[\s_]+", "-", title.strip().rstrip(":").lower())


def rubric_bullets(text: str) -> dict[str, list[str]]:
    """The bullets of each required section, in order (text after the bullet marker); unknown sections dropped.

    The judge is asked for one verdict per bullet, so it reads the rubric exactly as the gate checks it.
    """
    out: dict[str, list[str]] = {name: [] for name in SECTIONS}
    current: str | None = None
    for line in text.splitlines():
        if m := _HEADING.match(line):
            current = _section_key(m.group(1))
        elif _BULLET.match(line) and current in out:
            out[current].append(line[1:].strip())
        elif line.startswith((" ", "\t")) and line.strip() and current in out and out[current]:
            out[current][-1] += " " + line.strip()  # a wrapped bullet
    return out


def rubric_problems(text: str) -> list[str]:
    """Why the rubric does not have the required shape; empty when it does."""
    problems: list[str] = []
    counts: dict[str, int] = {}
    current: str | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if m := _HEADING.match(line):
            current = _section_key(m.group(1))
            if current not in SECTIONS:
                problems.append(f"line {n}: unexpected section {m.group(1)!r}")
            elif current in counts:
                problems.append(f"line {n}: section {m.group(1)!r} repeated")
            counts.setdefault(current, 0)
        elif _BULLET.match(line):
            if current is None:
                problems.append(f"line {n}: bullet before any section")
            else:
                counts[current] = counts.get(current, 0) + 1
        elif line.strip() and not line.startswith((" ", "\t")) and current is not None:
            problems.append(f"line {n}: text that is neither a heading nor a bullet")
    for name in SECTIONS:
        if name not in counts:
            problems.append(f"missing section {name}")
        elif not 1 <= counts[name] <= MAX_BULLETS:
            problems.append(f"section {name} has {counts[name]} bullets (want 1–{MAX_BULLETS})")
    return problems
