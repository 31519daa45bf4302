"""What the offline generator refuses to compile into a task because the skill's method would not decide the
answer: numbered topics that are not steps, glossary tables, tables keyed by file names, reported outcomes."""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster.knowledge import extract_knowledge
from skill2env_dagster.tasks.predicates.compile import compile_candidates
from tests.unit.task_helpers import skill_from_dir

SKILL = """---
name: filters
description: A playbook written to exercise what is and is not a checkable rule.
---

# Filters

## Critical Vulnerabilities

### 1. Reentrancy
### 2. Integer Overflow
### 3. Access Control
### 4. Front-Running

## Review workflow

### 1. Parse the report
### 2. Classify the finding
### 3. Assign the severity
### 4. Notify the owner

## Related skills

- **cro**: Apply psychology to page optimization
- **copywriting**: Write copy using psychological principles
- **popups**: Use triggers and psychology in popups

## Diagrams

| Diagram | File |
|---|---|
| Flowchart | `references/flowchart.md` |
| Sequence | `references/sequence.md` |
| Kanban | `references/kanban.md` |

## Retention

| Data type | Max retention |
|---|---|
| Session logs | 30 days |
| Invoices | 10 years |
| Support tickets | 2 years |
| Marketing consent | 2 years |

## Results

Companies like HubSpot saw a 40% pipeline increase within 90 days.
Keep subject lines under 50 characters.
"""


def _candidates(tmp_path: Path) -> list:
    folder = tmp_path / "filters"
    folder.mkdir()
    (folder / "SKILL.md").write_text(SKILL)
    skill = skill_from_dir(folder)
    return compile_candidates(extract_knowledge(skill), skill.skill_file)


def test_only_steps_tables_that_decide_and_kept_limits_compile(tmp_path: Path) -> None:
    cands = _candidates(tmp_path)
    procedures = {c.predicate.subject for c in cands if c.kind in ("order", "coverage")}
    tables = {c.predicate.subject for c in cands if c.kind == "lookup"}
    limits = {c.predicate.params["value"] for c in cands if c.kind == "limit"}
    assert "Review workflow" in procedures and "Critical Vulnerabilities" not in procedures
    assert tables == {"Retention"}  # the glossary and the file-name table decide nothing
    assert 50 in limits and 90 not in limits  # a reported outcome is not a limit anyone keeps
