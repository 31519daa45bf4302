#!/usr/bin/env python3
"""Minimal Markdown linter implementing the house rules in SKILL.md."""
import re
import sys
from pathlib import Path


def lint(path: Path) -> list[str]:
    out, level, seen, in_code = [], 0, set(), False
    lines = path.read_text(encoding="utf-8").split("\n")
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            if not in_code and line.strip() == "```":
                out.append(f"{path}:{n}:MD-FENCE:code block without a language")
            in_code = not in_code
            continue
        if in_code:
            continue
        if line != line.rstrip():
            out.append(f"{path}:{n}:MD-TRAIL:trailing whitespace")
        m = re.match(r"^(#{1,6}) (.*)", line)
        if m:
            new = len(m.group(1))
            if level and new > level + 1:
                out.append(f"{path}:{n}:MD-JUMP:heading jumps from h{level} to h{new}")
            if (new, m.group(2)) in seen:
                out.append(f"{path}:{n}:MD-DUP:duplicate heading")
            seen.add((new, m.group(2)))
            level = new
        for url in re.findall(r"(?<![(<])https?://\S+", line):
            out.append(f"{path}:{n}:MD-URL:bare URL {url}")
        for target in re.findall(r"\]\((\.{0,2}/[^)#]+)", line):
            if not (path.parent / target).exists():
                out.append(f"{path}:{n}:MD-LINK:missing link target {target}")
    return out


if __name__ == "__main__":
    problems = [p for f in sys.argv[1:] for p in lint(Path(f))]
    print("\n".join(problems)) if problems else None
    sys.exit(1 if problems else 0)
