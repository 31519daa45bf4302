"""The funnel counts skills from their final records (the snapshot after the second opinion), lists screened-out
reasons apart (a skill may carry several), and shows non-blocking findings as recorded, not screened out - in the
console, the JSON and the UI's corpus_stats."""

from __future__ import annotations

from pathlib import Path

from skill2env_dagster.artifacts import SNAPSHOT
from skill2env_dagster.cli.run import render
from skill2env_dagster.export.funnel import SkillCounts, crawl_funnel, final_records
from skill2env_dagster.export.inputs import CorpusInputs
from skill2env_dagster.export.stats import corpus_stats
from skill2env_dagster.export.tables import build_tables
from skill2env_dagster.models.skill import SecondOpinion, SkillRecord, SkillStatus
from skill2env_dagster.reasons import ReasonCode as R
from skill2env_dagster.store import ArtifactStore


def _skill(n: str, status: SkillStatus, *reasons: R, digest: str = "d") -> SkillRecord:
    return SkillRecord(skill_id=n, source="hub", source_kind="dir", source_uri="/hub", rel_path=n,
                       abs_path=f"/hub/{n}", skill_file="SKILL.md", bundle_digest=f"{digest}-{n}", status=status,
                       reasons=list(reasons))


def _hub() -> dict[str, SkillRecord]:
    return {
        "a": _skill("a", SkillStatus.SCREENED_OUT, R.NEEDS_LIVE_SERVICE, R.NEEDS_EXTERNAL_ACCOUNT, R.LICENCE_UNKNOWN),
        "b": _skill("b", SkillStatus.SCREENED_OUT, R.NEEDS_LIVE_SERVICE),
        "c": _skill("c", SkillStatus.ELIGIBLE, R.LICENCE_UNKNOWN),
        "d": _skill("d", SkillStatus.ELIGIBLE, R.LICENCE_UNKNOWN, R.STANDIN_POSSIBLE),
        "e": _skill("e", SkillStatus.SCREENED_OUT, R.NEEDS_EXTERNAL_ACCOUNT),  # the opinion clears it (below)
    }


def test_screened_out_counts_skills_and_reasons_apart_and_recorded_findings_are_not_screened_out():
    funnel = crawl_funnel(_hub().values(), SkillCounts())
    assert (funnel.skills_crawled, funnel.eligible, funnel.screened_out) == (5, 2, 3)
    assert list(funnel.screened_out_by_reason.items()) == [("needs_external_account", 2), ("needs_live_service", 2)]
    assert funnel.recorded_by_reason == {"licence_unknown": 3, "standin_possible": 1}
    text = render(funnel)
    assert ("skills crawled 5 · eligible 2 · screened out 3 skills (needs_external_account 2, needs_live_service 2; "
            "a skill may carry several)") in text
    assert "recorded, not screened out: licence_unknown 3, standin_possible 1" in text
    assert "licence_unknown" not in text.split("\n")[0]


def test_the_funnel_reads_the_final_records(tmp_path: Path):
    """A skill the second opinion cleared counts as eligible; a snapshot of another bundle does not count."""
    crawled = _hub()
    store = ArtifactStore(tmp_path)
    cleared = crawled["e"].model_copy(update={"status": SkillStatus.ELIGIBLE, "reasons": [], "second_opinion":
                                              SecondOpinion(model="m", prompt_version="v", cached=False,
                                                            cleared=[R.NEEDS_EXTERNAL_ACCOUNT])})
    store.save(SNAPSHOT, "e", cleared)
    store.save(SNAPSHOT, "b", crawled["b"].model_copy(update={"status": SkillStatus.ELIGIBLE, "reasons": [],
                                                             "bundle_digest": "an-older-bundle"}))
    funnel = crawl_funnel(final_records(store, crawled).values(), SkillCounts())
    assert (funnel.eligible, funnel.screened_out) == (3, 2)
    assert funnel.second_opinion == {"asked": 1, "cached": 0, "failed": 0, "cleared": 1, "screened_out": 0}
    assert "second opinion on 1 skill (0 from its cache, 0 failed: the rules' verdict stood) · cleared 1" \
        in render(funnel)


def test_the_ui_funnel_counts_skills_and_keeps_recorded_findings_apart():
    stats = corpus_stats(build_tables(CorpusInputs(skills=list(_hub().values()))), exported=0)
    assert stats.funnel["screened_out"] == 3 and stats.funnel["eligible"] == 2
    assert stats.skill_reasons == {"needs_external_account": 2, "needs_live_service": 2}
    assert stats.recorded_reasons == {"licence_unknown": 3, "standin_possible": 1}
