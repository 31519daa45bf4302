"""The crawl end to end on folders and git sources: statuses, reasons, provenance, never aborting."""

import os

import pyarrow.parquet as pq
import yaml

from skill2env_dagster.cli import main as cli_main
from skill2env_dagster.models.skill import SkillStatus
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.config import CrawlSettings, SourcesConfig, SourceSpec
from skill2env_dagster.skillhub.crawl import crawl, crawl_paths
from tests.support.hub import commit_all, init_repo, make_hub, write_skill


def _by_name(result):
    return {r.rel_path: r for r in result.records}


def test_bad_inputs_get_a_status_and_reason(tmp_path):
    hub = make_hub(tmp_path / "hub")
    (hub / "no-fm").mkdir()
    (hub / "no-fm" / "SKILL.md").write_text(
        "# No FM\n\ndescription: Count words per chapter of a Markdown book.\n\n## Steps\n\n"
        "Split the book on `## ` headings, count words with `wc -w`, and write `counts.csv` with the columns "
        "`chapter,words`. Chapters under 100 words are flagged as stubs in a third column.\n"
    )
    (hub / "bad-yaml").mkdir()
    (hub / "bad-yaml" / "SKILL.md").write_text("---\nname: bad-yaml\ndescription: a: b: c\n---\nbody\n")
    (hub / "binary").mkdir()
    (hub / "binary" / "SKILL.md").write_bytes(b"\x00\x01\x02" * 10)
    (hub / "empty").mkdir()
    (hub / "empty" / "SKILL.md").write_text("")
    os.symlink("/etc/passwd", hub / "csv-cleaner" / "leak.txt")
    big = write_skill(hub, "too-big")
    (big / "blob.txt").write_text("z" * 5000)
    result = crawl_paths([hub], CrawlSettings(max_skill_bytes=4000))
    recs = _by_name(result)
    assert recs["no-fm"].status == SkillStatus.ELIGIBLE and "no_frontmatter" in recs["no-fm"].warnings
    assert recs["bad-yaml"].status == SkillStatus.INVALID and ReasonCode.INVALID_YAML in recs["bad-yaml"].reasons
    assert recs["binary"].status == SkillStatus.INVALID
    assert recs["empty"].status == SkillStatus.INVALID
    leak = recs["csv-cleaner"]
    assert leak.status == SkillStatus.SCREENED_OUT and ReasonCode.SYMLINK_ESCAPE in leak.reasons
    assert any(f.file == "leak.txt" for f in leak.findings)
    assert recs["too-big"].status == SkillStatus.SCREENED_OUT and ReasonCode.SKILL_TOO_LARGE in recs["too-big"].reasons
    assert recs["log-counter"].status == SkillStatus.ELIGIBLE


def test_internal_error_in_one_skill_does_not_lose_others(tmp_path, monkeypatch):
    hub = make_hub(tmp_path / "hub")
    import skill2env_dagster.skillhub.crawl as crawl_mod

    real = crawl_mod.parse_skill_md

    def exploding(text, folder):
        if folder == "log-counter":
            raise RuntimeError("boom")
        return real(text, folder)

    monkeypatch.setattr(crawl_mod, "parse_skill_md", exploding)
    recs = _by_name(crawl_paths([hub]))
    assert recs["log-counter"].status == SkillStatus.INVALID
    assert recs["log-counter"].reasons == [ReasonCode.INTERNAL_ERROR]
    assert recs["csv-cleaner"].status == SkillStatus.ELIGIBLE


def test_missing_source_is_reported_not_fatal(tmp_path):
    hub = make_hub(tmp_path / "hub")
    config = SourcesConfig(sources=[
        SourceSpec(name="ok", kind="dir", path=str(hub)),
        SourceSpec(name="gone", kind="dir", path=str(tmp_path / "nope")),
    ])
    result = crawl(config)
    assert len(result.records) == 3
    assert [s.name for s in result.sources if s.error] == ["gone"]


def test_fixture_skills_recorded_not_crawled(tmp_path):
    hub = make_hub(tmp_path / "hub")
    write_skill(hub / "csv-cleaner" / "tests" / "fixtures", "broken")
    recs = _by_name(crawl_paths([hub]))
    fx = recs["csv-cleaner/tests/fixtures/broken"]
    assert fx.status == SkillStatus.SCREENED_OUT and fx.reasons == [ReasonCode.TEST_FIXTURE]
    assert fx.fixture_of == recs["csv-cleaner"].skill_id


def test_near_duplicate_copy_is_marked(tmp_path):
    hub = make_hub(tmp_path / "hub")
    text = (hub / "csv-cleaner" / "SKILL.md").read_text().replace("name: csv-cleaner", "name: csv-cleaner-v2")
    (hub / "csv-cleaner-v2").mkdir()
    (hub / "csv-cleaner-v2" / "SKILL.md").write_text(text.replace("sort by", "order by"))
    recs = _by_name(crawl_paths([hub], CrawlSettings(dedup_threshold=0.7)))
    dup = recs["csv-cleaner-v2"]
    assert dup.status == SkillStatus.DUPLICATE and dup.duplicate_of == recs["csv-cleaner"].skill_id
    assert recs["csv-cleaner"].status == SkillStatus.ELIGIBLE
    assert sum(r.status == SkillStatus.DUPLICATE for r in recs.values()) == 1


def test_git_source_pins_commits_and_digests_change_only_for_changed_skills(tmp_path):
    work = tmp_path / "work"
    init_repo(work)
    make_hub(work)
    c1 = commit_all(work, "one")
    (work / "log-counter" / "SKILL.md").write_text((work / "log-counter" / "SKILL.md").read_text() + "\nMore.\n")
    c2 = commit_all(work, "two")
    bare = tmp_path / "hub.git"
    import subprocess

    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)

    def run(ref):
        spec = SourceSpec(name="g", kind="git", url=str(bare), ref=ref)
        return crawl(SourcesConfig(sources=[spec], settings=CrawlSettings(cache_dir=str(tmp_path / "cache"))))

    r1, r2 = run(c1), run("main")
    assert {r.source_commit for r in r1.records} == {c1} and {r.source_commit for r in r2.records} == {c2}
    d1 = {r.skill_id: r.bundle_digest for r in r1.records}
    d2 = {r.skill_id: r.bundle_digest for r in r2.records}
    assert set(d1) == set(d2)
    assert [k for k in d1 if d1[k] != d2[k]] == ["g__log-counter"]
    assert r1.sources[0].commit == c1


def test_cli_crawl_writes_parquet(tmp_path, capsys):
    hub = make_hub(tmp_path / "hub")
    out = tmp_path / "out"
    assert cli_main(["crawl", str(hub), "--out", str(out)]) == 0
    table = pq.read_table(out / "skills.parquet").to_pylist()
    assert len(table) == 3
    for col in ("skill_id", "source", "rel_path", "name", "status", "reasons", "duplicate_of", "bundle_digest",
                "warnings"):
        assert col in table[0]
    assert {row["status"] for row in table} == {"eligible"}
    assert (out / "records" / f"{table[0]['skill_id']}.json").exists()


def test_cli_crawl_config_with_git_source(tmp_path):
    work = tmp_path / "work"
    init_repo(work)
    make_hub(work, ("csv-cleaner",))
    commit = commit_all(work, "one")
    cfg = tmp_path / "sources.yaml"
    cfg.write_text(yaml.safe_dump({"sources": [{"name": "remote", "kind": "git", "url": str(work)}],
                                   "settings": {"cache_dir": "cache"}}))
    out = tmp_path / "out"
    assert cli_main(["crawl", "--config", str(cfg), "--out", str(out)]) == 0
    rows = pq.read_table(out / "skills.parquet").to_pylist()
    assert rows[0]["source_commit"] == commit and (tmp_path / "cache").is_dir()


def test_hostile_file_system_entries_never_crash_the_crawl(tmp_path):
    hub = make_hub(tmp_path / "hub")
    skill = hub / "csv-cleaner"
    (skill / os.fsdecode(b"\xff.txt")).write_text("x")
    os.mkfifo(skill / "fifo")
    os.symlink("/proc/self", skill / "proc")
    bad_dir = hub / os.fsdecode(b"caf\xe9")
    bad_dir.mkdir()
    (bad_dir / "SKILL.md").write_text((hub / "log-counter" / "SKILL.md").read_text())
    out = tmp_path / "out"
    assert cli_main(["crawl", str(hub), "--out", str(out)]) == 0
    rows = {r["rel_path"]: r for r in pq.read_table(out / "skills.parquet").to_pylist()}
    assert rows["csv-cleaner"]["status"] == "screened_out" and "symlink_escape" in rows["csv-cleaner"]["reasons"]
    assert rows["caf\\xe9"]["status"] == "invalid" and rows["caf\\xe9"]["reasons"] == ["unreadable"]


def test_nested_real_subskill_is_its_own_skill_and_listed_by_its_parent(tmp_path):
    hub = make_hub(tmp_path / "hub")
    write_skill(hub / "csv-cleaner", "csv-joiner", body="Join two CSV files on the `id` column with `join -t, a b` "
                "after sorting both with `sort -t, -k1,1`; report rows that have no partner.")
    recs = _by_name(crawl_paths([hub]))
    parent, child = recs["csv-cleaner"], recs["csv-cleaner/csv-joiner"]
    assert parent.nested_skills == [child.skill_id]
    assert not any(f.rel_path.startswith("csv-joiner/") for f in parent.files)
    assert child.status == SkillStatus.ELIGIBLE
