"""Build small skill hubs (folders and git repos) for tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

SKILL_TEMPLATE = """---
name: {name}
description: {description}
license: MIT
---
# {title}

{body}
"""

BODIES = {
    "csv-cleaner": "Normalise CSV files: trim whitespace in every cell, drop exact duplicate rows, and sort by the "
    "`id` column. Run `python3 scripts/clean.py input.csv > output.csv` and compare row counts before and after.",
    "log-counter": "Count HTTP status codes in an nginx access log with `awk '{print $9}' access.log | sort | uniq -c`."
    " Report the five most frequent 5xx paths and the hour with the most errors.",
    "unit-converter": "Convert laboratory measurements between SI units: mg/dL to mmol/L for glucose (divide by "
    "18.016), micrograms to milligrams, and Celsius to Kelvin. Keep four significant figures.",
}


def write_skill(root: Path, name: str, body: str | None = None, description: str | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    text = SKILL_TEMPLATE.format(
        name=name, title=name.replace("-", " ").title(), description=description or f"Use when working on {name}.",
        body=body or BODIES.get(name, f"Steps for {name}: read the input, apply the rules, write the report."),
    )
    (folder / "SKILL.md").write_text(text)
    return folder


def make_hub(root: Path, names: tuple[str, ...] = tuple(BODIES)) -> Path:
    for n in names:
        write_skill(root, n)
    return root


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def commit_all(work: Path, message: str) -> str:
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", message)
    return git(work, "rev-parse", "HEAD")


def init_repo(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    git(work, "init", "-q", "-b", "main")


def write_sources(path: Path, sources: list[dict], cache_dir: Path, screen: dict | None = None) -> Path:
    import yaml

    settings: dict = {"cache_dir": str(cache_dir), **({"screen": screen} if screen else {})}
    path.write_text(yaml.safe_dump({"sources": sources, "settings": settings}))
    return path
