"""Integration: crawl the real 118-folder corpus; every SKILL.md gets a status, nothing crashes."""

import pytest

from skill2env_dagster.models.skill import SkillStatus
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.crawl import crawl_paths

pytestmark = pytest.mark.corpus


def test_every_corpus_skill_gets_a_status(corpus_dir, corpus_manifest):
    result = crawl_paths([corpus_dir])
    n_skill_md = sum(1 for p in corpus_dir.rglob("*") if p.name.lower() == "skill.md" and p.is_file())
    assert len(result.records) == n_skill_md >= 118
    assert all(r.status in set(SkillStatus) for r in result.records)
    assert not [r.skill_id for r in result.records if ReasonCode.INTERNAL_ERROR in r.reasons]
    assert not [r.skill_id for r in result.records if ReasonCode.MALICIOUS in r.reasons]
    counts = result.status_counts()
    assert counts.get("eligible", 0) > len(result.records) // 3, counts
    # Manifest quirks we must reproduce as warnings on the top-level skill folders.
    by_path = {r.rel_path: r for r in result.records}
    for entry in corpus_manifest:
        rec = by_path[entry["id"]]
        if "name_dir_mismatch" in entry["quirks"]:
            assert "name_dir_mismatch" in rec.warnings, entry["id"]
        if "no_frontmatter" in entry["quirks"]:
            assert "no_frontmatter" in rec.warnings, entry["id"]
