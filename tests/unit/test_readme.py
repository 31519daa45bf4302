"""The README and docs/ stay true to the code and to each other.

The README is the newcomer's one sitting (at most 250 lines, the two set-up commands, the fast tier); every reason
code and CLI command is documented; and no relative link in README.md or docs/*.md points at a file or a heading
that does not exist, so moving a section cannot silently strand its readers.
"""

import re
from pathlib import Path

import pytest

from skill2env_dagster.cli import COMMAND_MODULES
from skill2env_dagster.reasons import INFRA_CODES, ReasonCode

README_MAX_LINES = 250
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _docs(repo_root: Path) -> list[Path]:
    return [repo_root / "README.md", *sorted((repo_root / "docs").glob("*.md"))]


def _prose_lines(text: str) -> list[str]:
    """Lines outside fenced code blocks (a `# comment` in a bash block is no heading, a link there is no link)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (word characters, '-' and spaces kept)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    for line in _prose_lines(path.read_text()):
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            if count:
                seen[f"{slug}-{count}"] = 1
    return set(seen)


def broken_links(path: Path, repo_root: Path) -> list[str]:
    broken = []
    for line in _prose_lines(path.read_text()):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):  # http(s), mailto: not ours to check offline
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.is_relative_to(repo_root.resolve()):
                continue  # ../shared is beside the clone, not in it
            if not dest.exists():
                broken.append(f"{target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{target} (no such heading)")
    return broken


def test_readme_is_read_in_one_sitting(repo_root):
    lines = (repo_root / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES


def test_readme_names_the_two_commands_and_the_fast_tier(repo_root):
    readme = (repo_root / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert block, "the quick start's command block"
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert "bash scripts/test.sh --fast" in readme


def test_every_relative_link_resolves(repo_root):
    broken = {str(p.relative_to(repo_root)): b for p in _docs(repo_root) if (b := broken_links(p, repo_root))}
    assert broken == {}


@pytest.mark.parametrize(("text", "target", "ok"), [
    ("## Where we stand\n", "#where-we-stand", True),
    ("## 0. Process a hub headlessly: `skill2env run`\n", "#0-process-a-hub-headlessly-skill2env-run", True),
    ("## Results\n## Results\n", "#results-1", True),
    ("```bash\n# not a heading\n```\n", "#not-a-heading", False),
    ("## Gates\n", "#gate", False),
    ("## Gates\n", "missing.md", False),
])
def test_the_link_check_can_fail(tmp_path, text, target, ok):
    page = tmp_path / "page.md"
    page.write_text(f"{text}\nSee [it]({target}).\n")
    assert (broken_links(page, tmp_path) == []) is ok


def test_every_reason_code_is_documented(repo_root):
    page = (repo_root / "docs" / "reason-codes.md").read_text()
    missing = [c.value for c in ReasonCode if f"`{c.value}`" not in page]
    assert missing == []
    for code in INFRA_CODES:
        assert f"`{code.value}`†" in page, code


def test_every_command_is_in_the_readme(repo_root):
    readme = (repo_root / "README.md").read_text()
    for name in COMMAND_MODULES:
        assert f"skill2env {name.replace('_', '-')}" in readme, name
