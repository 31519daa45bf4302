"""A re-crawl of a git source still at the previous snapshot's commit, with the same code and settings, reuses that
snapshot's records and reads no skill (the nightly refresh of an unchanged hub); a new commit, other settings or
another code version read the source again, and a folder source is always read."""

from __future__ import annotations

import pytest

from skill2env_dagster.models.skill import SkillStatus
from skill2env_dagster.skillhub import crawl as crawl_module
from skill2env_dagster.skillhub.config import CrawlSettings, SourcesConfig, SourceSpec
from skill2env_dagster.skillhub.crawl import crawl
from skill2env_dagster.skillhub.snapshot import previous_crawl, publish_snapshot
from tests.support.hub import commit_all, init_repo, make_hub, write_skill


@pytest.fixture
def repo(tmp_path):
    work = tmp_path / "work"
    init_repo(work)
    make_hub(work)
    text = (work / "csv-cleaner" / "SKILL.md").read_text().replace("name: csv-cleaner", "name: csv-cleaner-v2")
    write_skill(work, "csv-cleaner-v2")
    (work / "csv-cleaner-v2" / "SKILL.md").write_text(text.replace("sort by", "order by"))
    commit_all(work, "one")
    return work


def _config(tmp_path, repo, threshold=0.7, extra=()):
    sources = [SourceSpec(name="g", kind="git", url=str(repo), ref="main"), *extra]
    return SourcesConfig(sources=sources, settings=CrawlSettings(cache_dir=str(tmp_path / "cache"),
                                                                 dedup_threshold=threshold))


def _no_reading(monkeypatch):
    def refuse(job):
        raise AssertionError(f"read {job.skill_id}")

    monkeypatch.setattr(crawl_module, "build_record", refuse)


def test_an_unchanged_commit_reuses_the_records_and_reads_nothing(tmp_path, repo, monkeypatch):
    root = tmp_path / "snapshots"
    first = crawl(_config(tmp_path, repo), previous_crawl(root), "v1")
    publish_snapshot(first, root)
    assert not first.sources[0].reused and first.sources[0].reuse_key
    dupes = [r.skill_id for r in first.records if r.status == SkillStatus.DUPLICATE]
    assert dupes == ["g__csv-cleaner-v2"]

    with monkeypatch.context() as m:
        _no_reading(m)
        again = crawl(_config(tmp_path, repo), previous_crawl(root), "v1")
    assert again.sources[0].reused and again.sources[0].skills == len(first.records)
    assert again.snapshot_id() == first.snapshot_id()
    def dump(result):
        return sorted((r.model_dump() for r in result.records), key=lambda d: d["skill_id"])

    assert dump(again) == dump(first)


def test_a_new_commit_other_settings_or_code_read_again(tmp_path, repo):
    root = tmp_path / "snapshots"
    publish_snapshot(crawl(_config(tmp_path, repo), None, "v1"), root)
    assert not crawl(_config(tmp_path, repo), previous_crawl(root), "v2").sources[0].reused
    assert not crawl(_config(tmp_path, repo, threshold=0.9), previous_crawl(root), "v1").sources[0].reused
    (repo / "log-counter" / "SKILL.md").write_text((repo / "log-counter" / "SKILL.md").read_text() + "\nMore.\n")
    commit_all(repo, "two")
    changed = crawl(_config(tmp_path, repo), previous_crawl(root), "v1")
    assert not changed.sources[0].reused
    assert {r.source_commit for r in changed.records} != {r.source_commit for r in previous_crawl(root).records()}


def test_a_reused_source_beside_a_read_one_is_deduplicated_again(tmp_path, repo, monkeypatch):
    """The folder source holds the canonical copy of a skill the git source has too: the reused records lose
    their old duplicate marks and dedup runs over both sources."""
    root = tmp_path / "snapshots"
    publish_snapshot(crawl(_config(tmp_path, repo), None, "v1"), root)
    folder = tmp_path / "folder"
    write_skill(folder, "log-counter")
    (folder / "log-counter" / "SKILL.md").write_text((repo / "log-counter" / "SKILL.md").read_text())
    extra = (SourceSpec(name="a", kind="dir", path=str(folder), priority=0),)
    both = crawl(_config(tmp_path, repo, extra=extra), previous_crawl(root), "v1")
    reused = {r.name: r.reused for r in both.sources}
    assert reused == {"g": True, "a": False}
    by_id = {r.skill_id: r for r in both.records}
    assert by_id["g__csv-cleaner-v2"].status == SkillStatus.DUPLICATE  # found again, not carried over twice
    assert len([f for f in by_id["g__csv-cleaner-v2"].findings if f.rule == "dedup"]) == 1
    assert by_id["g__log-counter"].duplicate_of == "a__log-counter"


def test_the_same_records_by_new_code_record_the_new_keys(tmp_path, repo, monkeypatch):
    """New code that finds the very same records publishes no new snapshot (content-addressed); the crawl asset
    updates the published manifest's reuse keys, so the next crawl by that code reuses it."""
    from skill2env_dagster.assets.skillhub import _record_reuse_keys
    from skill2env_dagster.skillhub.snapshot import manifest_of

    root = tmp_path / "snapshots"
    publish_snapshot(crawl(_config(tmp_path, repo), None, "v1"), root)
    again = crawl(_config(tmp_path, repo), previous_crawl(root), "v2")
    snap_dir, manifest = publish_snapshot(again, root)
    assert manifest.snapshot_id == manifest_of(again).snapshot_id and not again.sources[0].reused
    _record_reuse_keys(snap_dir, manifest)
    with monkeypatch.context() as m:
        _no_reading(m)
        third = crawl(_config(tmp_path, repo), previous_crawl(root), "v2")
    assert third.sources[0].reused
