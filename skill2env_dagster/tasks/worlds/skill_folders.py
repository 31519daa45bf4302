"""A repository of skill folders (SKILL.md with YAML front matter, some with reference files) in which a skill-authoring
skill's rules decide which folders break which rule: name length and allowed characters, description length, the
length of SKILL.md or its body, a table of contents at the top of long reference files.

Folders are planted per rule so that counting alone does not find them: lengths exactly at and one past each limit
(the comparator decides which side is a breach), a long front matter that pushes a compliant body past the limit
when the whole file is counted, a folded description whose YAML lines are longer than its value, long reference
files that do start with a contents list and one exactly at the line limit.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

NAMES = ("invoice-matcher", "log-summariser", "release-notes-writer", "schema-reviewer", "csv-cleaner",
         "meeting-digest", "api-changelog", "test-planner", "budget-tracker", "incident-timeline", "doc-linter",
         "data-dictionary", "pr-describer", "sql-explainer", "access-reviewer", "backlog-groomer")
WORDS = ("use", "when", "the", "user", "asks", "to", "review", "files", "and", "report", "issues", "with", "clear",
         "steps", "for", "each", "change", "in", "a", "project", "before", "release", "notes", "are", "shared")
TOC_HEAD = "## Contents"


@dataclass
class SkillFolder:
    name: str  # the front matter's name (also the folder name)
    description: str
    folded: bool  # the description is a folded block (its YAML lines differ from its value)
    body_lines: int
    extra_front: int  # extra front-matter lines (a metadata block)
    refs: list[tuple[str, int, bool]] = field(default_factory=list)  # (file name, lines, starts with a TOC)
    planted: list[str] = field(default_factory=list)


def _exact(rng: random.Random, n: int) -> str:
    """A sentence-like text of exactly n characters."""
    words: list[str] = []
    while len(" ".join(words)) < n:
        words.append(rng.choice(WORDS))
    text = " ".join(words)[:n].rstrip()
    while len(text) < n:
        text += "s"
    return text[0].upper() + text[1:]


def _name(rng: random.Random, n: int, base: str) -> str:
    """A hyphenated lowercase name of exactly n characters that starts like `base`."""
    parts = [base]
    while len("-".join(parts)) < n:
        parts.append(rng.choice(("review", "report", "helper", "check", "notes", "tool", "data", "files")))
    text = "-".join(parts)[:n].rstrip("-")
    while len(text) < n:
        text += "x"
    return text


def _rule(rules: list[dict[str, Any]], part: str) -> dict[str, Any] | None:
    return next((r for r in rules if r["part"] == part), None)


def limit_cases(r: dict[str, Any]) -> tuple[int, int]:
    """(the longest compliant length, the shortest breaching one) for a length rule."""
    return (r["value"] - 1, r["value"]) if r["comparator"] == "lt" else (r["value"], r["value"] + 1)


def _length_cases(r: dict[str, Any]) -> list[tuple[str, str]]:
    """The planted cases of one length rule. Three lengths exactly at the bound (where the comparator decides: a
    breach under "under N", compliant under "max N"), one on the other side of it, one far past it (not for names),
    and as many of the part's own look-alikes (a long front matter over a compliant body, a folded description) as
    the rule has breaches, plus one: a reading that drops one condition is wrong on most of what that rule decides."""
    part = r["part"]
    lt = r["comparator"] == "lt"
    cases = [(part, "at_value")] * 3 + [(part, "inside" if lt else "past_limit")]
    cases += [(part, "far_past")] if part != "name" else []
    breaches = (3 if lt else 1) + (part != "name")
    trap = {"description": "folded_ok", "body": "long_front", "file": "long_front"}.get(part)
    return cases + ([(part, trap)] * (breaches + 1) if trap else [])


def plant(rules: list[dict[str, Any]], n: int, rng: random.Random) -> list[SkillFolder]:
    """n folders, each planted with one case of one rule (cycling over the rules), the rest compliant."""
    names = list(NAMES)
    rng.shuffle(names)
    cases: list[tuple[str, str]] = []
    for r in rules:
        part = r["part"]
        if part in ("name", "description", "body", "file"):
            cases += _length_cases(r)
        elif part == "name_charset":
            cases += [(part, "underscore"), (part, "digits_ok"), (part, "digits_ok")] + [(part, "uppercase")] * (
                1 if r["lowercase"] else 0)
        elif part == "name_pattern":
            cases += [(part, k) for k in ("double_hyphen", "trailing_hyphen", "uppercase", "digits_ok")
                      if re.fullmatch(r["pattern"], _variant(NAMES[0], k)) is None or k == "digits_ok"]
        elif part == "toc":
            # Long reference files with a contents list are compliant and longer than any SKILL.md: counting lines
            # alone finds them first; files of exactly the limit are not longer than it.
            cases += [(part, "at_limit_no_toc"), (part, "at_limit_no_toc"), (part, "past_limit_no_toc"),
                      (part, "long_with_toc"), (part, "very_long_with_toc"), (part, "very_long_with_toc")]
    rng.shuffle(cases)
    folders: list[SkillFolder] = []
    for i in range(max(n, len(cases))):
        # Folder names are paths: one equal to another's (a planted "name-2" next to the 17th folder's "name-2", or
        # two names cut to the same length) would overwrite that folder. Such a folder is made again on the next
        # suffix; nothing else changes, so the worlds of every other seed stay as they were.
        taken, suffix = {f.name for f in folders}, i // len(names) + 1
        while True:
            base = names[i % len(names)] + (f"-{suffix}" if suffix > 1 else "")
            f = SkillFolder(base, _exact(rng, rng.randrange(120, 300)), False, rng.randrange(120, 380), 0)
            if i < len(cases):
                _apply(f, cases[i], rules, rng)
            if f.name not in taken:
                break
            suffix += 1
        folders.append(f)
    return folders


# The condition each planted case tests (what `every_condition` grades), by case kind.
CONDITIONS = {"at_value": "the bound, with its comparator", "long_front": "the part measured, not the whole file",
              "folded_ok": "the description's value, not its YAML lines", "digits_ok": "the characters allowed",
              "uppercase": "the characters allowed", "at_limit_no_toc": "longer than the limit",
              "long_with_toc": "a contents list", "very_long_with_toc": "a contents list"}


def conditions(folders: list[SkillFolder], ids: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The paths planted to test each condition of each rule, keyed '<rule id>: <condition>'."""
    rid = {r["part"]: k for k, r in ids.items()}
    out: dict[str, list[str]] = {}
    for f in folders:
        for planted in f.planted:
            part, kind = planted.split(":")
            if kind not in CONDITIONS or part not in rid:
                continue
            paths = ([f"{f.name}/references/{ref}" for ref, _, _ in f.refs] if part == "toc"
                     else [f"{f.name}/SKILL.md"])
            out.setdefault(f"{rid[part]}: {CONDITIONS[kind]}", []).extend(paths)
    return out


def _apply(f: SkillFolder, case: tuple[str, str], rules: list[dict[str, Any]], rng: random.Random) -> None:
    part, kind = case
    r = _rule(rules, part)
    assert r is not None
    f.planted.append(f"{part}:{kind}")
    if part in ("name", "description", "body", "file"):
        ok, bad = limit_cases(r)
        size = {"at_value": r["value"], "inside": r["value"] - 1, "past_limit": r["value"] + 1,
                "far_past": bad + rng.randrange(40, 160), "folded_ok": ok - rng.randrange(0, 30),
                "long_front": ok - rng.randrange(0, 15)}[kind]
        if part == "name":
            f.name = _name(rng, size, f.name)
        elif part == "description":
            f.description, f.folded = _exact(rng, size), kind == "folded_ok"
        elif part == "body":
            f.body_lines = size
            f.extra_front = rng.randrange(25, 45) if kind == "long_front" else 0
        else:  # the whole file counts: front matter lines are part of it
            f.body_lines = size - 4 - (rng.randrange(25, 45) if kind == "long_front" else 0)
            f.extra_front = size - 4 - f.body_lines
    elif part in ("name_charset", "name_pattern"):
        f.name = _variant(f.name, kind)
    else:
        value = r["value"]
        size, toc = {"at_limit_no_toc": (value, False), "past_limit_no_toc": (value + 1, False),
                     "long_with_toc": (value + rng.randrange(30, 120), True),
                     "very_long_with_toc": (max(value * 3, 560) + rng.randrange(0, 300), True)}[kind]
        f.refs.append((rng.choice(("reference.md", "patterns.md", "api.md", "examples.md")), size, toc))


def _variant(name: str, kind: str) -> str:
    """A name that tests one of the naming rules: the characters, or the shape a pattern asks for."""
    return {"underscore": name.replace("-", "_", 1), "digits_ok": name + "-2",
            "uppercase": name[:1].upper() + name[1:], "double_hyphen": name.replace("-", "--", 1),
            "trailing_hyphen": name + "-"}[kind]


def _yaml_description(f: SkillFolder) -> list[str]:
    if not f.folded:
        return [f'description: "{f.description}"']
    words, lines, cur = f.description.split(" "), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > 70:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    lines.append(cur)
    return ["description: >-"] + [f"  {ln}" for ln in lines]


def _body(prose: list[str], n: int, title: str, rng: random.Random) -> list[str]:
    """Exactly n body lines: a title, then the prose in sections, blank lines between paragraphs."""
    out = [f"# {title}", ""]
    k = rng.randrange(len(prose)) if prose else 0
    section = 1
    while len(out) < n:
        if len(out) % 24 == 2:
            out += [f"## Part {section}", ""]
            section += 1
            continue
        out.append(prose[k % len(prose)] if prose else "Follow the steps above.")
        k += 1
        if len(out) % 5 == 0:
            out.append("")
    return out[:n]


def render(f: SkillFolder, prose: list[str], rng: random.Random) -> dict[str, str]:
    """Files of one folder, relative to the folder."""
    front = ["---", f"name: {f.name}", *_yaml_description(f)]
    if f.extra_front:
        front += ["metadata:"] + [f"  note_{j}: keep" for j in range(f.extra_front - 1)]
    front.append("---")
    title = f.name.replace("-", " ").replace("_", " ").title()
    files = {"SKILL.md": "\n".join(front + _body(prose, f.body_lines, title, rng)) + "\n"}
    for ref, size, toc in f.refs:
        lines = [f"# {ref[:-3].title()}", ""]
        heads = [f"Section {j}" for j in range(1, 5)]
        if toc:
            lines += [TOC_HEAD, ""] + [f"- [{h}](#{h.lower().replace(' ', '-')})" for h in heads] + [""]
        body = _body(prose, size - len(lines) + 2, "x", rng)[2:]  # without _body's own title lines
        for j, h in enumerate(heads):
            pos = j * max(1, len(body) // len(heads))
            if pos < len(body):
                body[pos] = f"## {h}"
        lines += body
        assert len(lines) == size, (len(lines), size)
        files[f"references/{ref}"] = "\n".join(lines) + "\n"
    return files


def measure(files: dict[str, str]) -> dict[str, int | str]:
    """What each rule measures in one folder (the reference implementation's reading)."""
    text = files["SKILL.md"]
    lines = text.split("\n")[:-1]
    end = lines.index("---", 1)
    head = lines[1:end]
    name = next(ln.split(":", 1)[1].strip() for ln in head if ln.startswith("name:"))
    i = next(j for j, ln in enumerate(head) if ln.startswith("description:"))
    raw = head[i].split(":", 1)[1].strip()
    if raw == ">-":
        parts = []
        for ln in head[i + 1:]:
            if not ln.startswith("  "):
                break
            parts.append(ln.strip())
        desc = " ".join(parts)
    else:
        desc = raw.strip('"')
    return {"name": name, "name_len": len(name), "desc_len": len(desc), "body": len(lines) - end - 1,
            "file": len(lines)}


def has_toc(text: str) -> bool:
    head = text.split("\n")[:10]
    if TOC_HEAD not in head:
        return False
    start = head.index(TOC_HEAD)
    links = [ln for ln in text.split("\n")[start + 1:start + 12] if re.match(r"- \[.+\]\(#.+\)$", ln)]
    return len(links) >= 2
