"""SkillKnowledge: what the extractor finds on our examples and on every real skill of the shared corpus, and that
every source reference points at a line that really says it."""

from __future__ import annotations

from pathlib import Path

import pytest

from skill2env_dagster.knowledge import cached_knowledge, extract_knowledge
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.skillhub.crawl import crawl_paths
from tests.unit.task_helpers import skill_from_dir


def _line(skill_dir: Path, rel: str, n: int) -> str:
    return (skill_dir / rel).read_text(encoding="utf-8", errors="replace").splitlines()[n - 1]


def _refs_hold(k: SkillKnowledge, root: Path) -> list[str]:
    bad = []
    for ref in k.refs():
        line = _line(root, ref.file, ref.line)
        if ref.quote not in line:
            bad.append(f"{ref.label}: {ref.quote!r} not in {line!r}")
    return bad


def test_csv_dedupe_rules_procedure_and_artifacts(examples_dir):
    skill = skill_from_dir(examples_dir / "csv-dedupe")
    k = extract_knowledge(skill)
    texts = [r.text for r in k.rules]
    assert any("Never deduplicate on the raw text" in t for t in texts)
    assert any(p.kind == "numbered_list" and len(p.steps) == 7 and p.steps[0].text.startswith("Read the header")
               for p in k.procedures)
    roles = {a.path: a.role for a in k.artifacts}
    assert roles["scripts/dedupe_csv.py"] == "script" and roles["assets/customers.csv"] == "data"
    assert any(e.kind == "io_pair" and e.input == "sw1a 1aa" and e.output == "SW1A1AA" for e in k.examples)
    assert any(e.kind == "command" and e.text.startswith("python3 scripts/dedupe_csv.py") for e in k.examples)
    assert _refs_hold(k, examples_dir / "csv-dedupe") == []


def test_markdown_lint_table_and_git_changelog_exclusion(examples_dir):
    lint = extract_knowledge(skill_from_dir(examples_dir / "markdown-docs-lint"))
    table = next(t for t in lint.tables if t.columns[:2] == ["code", "rule"])
    assert [r[0] for r in table.rows][:3] == ["MD-H1", "MD-JUMP", "MD-DUP"]
    assert all(_line(examples_dir / "markdown-docs-lint", table.ref.file, n).lstrip().startswith("|")
               for n in table.row_lines)
    log = extract_knowledge(next(r for r in crawl_paths([examples_dir]).records if r.rel_path == "git-changelog"))
    assert any("Merge commits" in p.text and p.kind == "exclusion" for p in log.pitfalls)
    assert any(c.kind == "conventional_commit" for c in log.conventions)


def test_thresholds_defaults_and_tokens_from_prose(tmp_path):
    folder = tmp_path / "style"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: style\ndescription: House style for commit messages and configs.\n---\n\n# Style\n\n"
        "## Rules\n\n- Keep subject lines under 50 characters, except merge commits.\n"
        "- Retry at most 3 times.\n- Never use `git push --force` on shared branches.\n"
        "- Use `--force-with-lease` instead of `--force`.\n\n"
        "## Options\n\n| Option | Default | Meaning |\n|---|---|---|\n| `timeout` | 30 | seconds |\n"
        "| `retries` | 3 | attempts |\n\nThe `mode` setting defaults to `strict`.\n")
    k = extract_knowledge(skill_from_dir(folder))
    t = next(t for t in k.thresholds if t.unit == "characters")
    assert (t.subject, t.comparator, t.value, t.scope) == ("subject lines", "lt", 50.0, "except merge commits")
    assert any(t.unit == "times" and t.comparator == "le" and t.value == 3 for t in k.thresholds)
    assert {(d.key, d.value) for d in k.defaults} >= {("timeout", "30"), ("retries", "3"), ("mode", "strict")}
    assert any(r.polarity == "forbid" and r.token == "git push --force" for r in k.token_rules)
    assert any(r.polarity == "replace" and r.token == "--force" and r.replacement == "--force-with-lease"
               for r in k.token_rules)
    assert _refs_hold(k, folder) == []


def test_cached_knowledge_reuses_only_a_matching_extraction(examples_dir):
    skill = skill_from_dir(examples_dir / "csv-dedupe")
    first = extract_knowledge(skill)
    assert cached_knowledge(first, skill) is first
    moved = skill.model_copy(update={"bundle_digest": "0" * 64})
    assert cached_knowledge(first, moved) is not first


@pytest.mark.corpus
def test_every_corpus_skill_extracts_with_true_references(corpus_dir):
    records = [r for r in crawl_paths([corpus_dir]).records if r.is_eligible]
    assert len(records) >= 90
    with_rules = with_method = 0
    for skill in records:
        k = extract_knowledge(skill)
        assert _refs_hold(k, Path(skill.abs_path)) == [], skill.skill_id
        with_rules += len(k.rules) >= 3
        with_method += bool(k.procedures or k.tables or k.templates or k.thresholds or k.token_rules)
    # Skills that visibly state rules yield them; most skills carry some checkable method.
    assert with_rules >= 0.75 * len(records)
    assert with_method >= 0.8 * len(records)
