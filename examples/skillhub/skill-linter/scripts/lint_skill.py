#!/usr/bin/env python3
"""Lint skill folders against the SKILL.md rules listed in SKILL.md."""
import re
import sys
from pathlib import Path

import yaml

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
KNOWN = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}


def lint(folder: Path) -> list[str]:
    out: list[str] = []
    path = folder / "SKILL.md"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    m = re.match(r"^---\n(.*?)\n---\n?(.*)$", text, re.S)
    if not m:
        return [f"{folder}:SK001:no frontmatter block"]
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        return [f"{folder}:SK002:frontmatter is not valid YAML ({e.__class__.__name__})"]
    if not isinstance(meta, dict):
        return [f"{folder}:SK002:frontmatter is not a mapping"]
    name, desc, body = str(meta.get("name", "")), str(meta.get("description", "")), m.group(2)
    if not NAME.match(name) or len(name) > 64:
        out.append(f"{folder}:SK003:invalid name {name!r}")
    if name != folder.resolve().name:
        out.append(f"{folder}:SK004:name {name!r} differs from folder {folder.resolve().name!r}")
    if not 1 <= len(desc) <= 1024:
        out.append(f"{folder}:SK005:description length {len(desc)}")
    if body.count("\n") >= 500:
        out.append(f"{folder}:SK006:body has {body.count(chr(10))} lines")
    prose = re.sub(r"`[^`\n]*`", "", body)  # links quoted in code spans are examples, not links
    for target in re.findall(r"\]\(([^)#:]+)\)", prose):
        if not (folder / target).resolve().is_relative_to(folder.resolve()) or not (folder / target).exists():
            out.append(f"{folder}:SK007:broken link {target}")
    out += [f"{folder}:SK008:unknown key {k}" for k in sorted(set(meta) - KNOWN)]
    return out


if __name__ == "__main__":
    problems = [p for arg in sys.argv[1:] for p in lint(Path(arg))]
    print("\n".join(problems))
    sys.exit(1 if any(":SK00" + c + ":" in p for p in problems for c in "12357") else 0)
