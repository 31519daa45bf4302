"""`skill2env run` without Docker: what its arguments crawl, and how it reports a run that had nothing to do."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from skill2env_dagster.cli.run import render
from skill2env_dagster.cli.runner.home import RunHome, RunnerError, instance_config_text
from skill2env_dagster.cli.runner.sources import combine_sources, parse_git, write_sources
from skill2env_dagster.export.funnel import Funnel, SkillCounts, WorkDone
from skill2env_dagster.skillhub.config import CrawlSettings, load_sources_config


@pytest.mark.parametrize(("item", "expected"), [
    ("https://example.org/org/skills.git@v1.2", ("https://example.org/org/skills.git", "v1.2")),
    ("https://example.org/org/skills.git@feature/x", ("https://example.org/org/skills.git", "feature/x")),
    ("https://user@example.org/org/skills.git", ("https://user@example.org/org/skills.git", "HEAD")),
    ("git@github.com:org/skills.git@main", ("git@github.com:org/skills.git", "main")),
    ("git@github.com:org/skills.git", ("git@github.com:org/skills.git", "HEAD")),
    ("just-a-word", None),
])
def test_git_arguments_split_url_and_ref(item, expected):
    assert parse_git(item) == expected


def test_arguments_become_named_sources(tmp_path):
    (tmp_path / "a" / "hub").mkdir(parents=True)
    (tmp_path / "b" / "hub").mkdir(parents=True)
    repo = tmp_path / "skills-repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    config = combine_sources([str(tmp_path / "a" / "hub"), str(tmp_path / "b" / "hub"), f"{repo}@main"], [],
                             CrawlSettings(cache_dir=str(tmp_path / "cache")))
    assert [(s.name, s.kind) for s in config.sources] == [("hub", "dir"), ("hub-2", "dir"), ("skills-repo", "git")]
    git = config.sources[2]
    assert (git.url, git.ref) == (str(repo), "main")
    write_sources(config, tmp_path / "sources.yaml")
    again = load_sources_config(tmp_path / "sources.yaml")
    assert again.sources == config.sources and again.settings.cache_dir == str(tmp_path / "cache")


def test_a_sources_file_keeps_its_names_and_settings(tmp_path):
    (tmp_path / "hub").mkdir()
    (tmp_path / "sources.yaml").write_text(yaml.safe_dump({
        "sources": [{"name": "hub", "kind": "dir", "path": "hub"}], "settings": {"dedup_threshold": 0.9}}))
    config = combine_sources([str(tmp_path / "hub")], [tmp_path / "sources.yaml"], CrawlSettings())
    assert [s.name for s in config.sources] == ["hub", "hub-2"]  # the argument yields to the file's name
    assert config.settings.dedup_threshold == 0.9


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(RunnerError, match="neither a folder nor a git repository"):
        combine_sources([str(tmp_path / "missing")], [], CrawlSettings())
    with pytest.raises(RunnerError, match="nothing to crawl"):
        combine_sources([], [], CrawlSettings())


def test_instance_config_has_no_telemetry_and_the_pools():
    config = yaml.safe_load(instance_config_text())
    assert config["telemetry"] == {"enabled": False}
    assert config["concurrency"]["pools"]["granularity"] == "op"


def test_one_run_per_folder_at_a_time(tmp_path):
    home = RunHome(tmp_path)
    with home.locked(), pytest.raises(RunnerError, match="another skill2env run"), home.locked():
        pass
    assert home.gate_label == RunHome(tmp_path).gate_label != RunHome(tmp_path / "x").gate_label


def test_a_run_with_nothing_to_do_says_so_with_counts():
    funnel = Funnel(skills_crawled=3, eligible=2, work=WorkDone(partitions=3, up_to_date=3, analytics="up_to_date"))
    assert "nothing to do: 3 of 3 partitions up to date (0 runs), analytics up to date" in render(funnel)


def test_stage_counts_add_up():
    a = SkillCounts(planned=1, created=2, retained=1, rejected_by_reason={"oracle_failed": 1})
    b = SkillCounts(planned=1, created=2, retained=2)
    assert a + b == SkillCounts(planned=2, created=4, retained=3, rejected_by_reason={"oracle_failed": 1})


def test_progress_shows_stage_counts_and_failures(tmp_path):
    import io
    import re

    from rich.console import Console

    from skill2env_dagster.cli.runner.outcome import PartitionOutcome
    from skill2env_dagster.cli.runner.progress import ProgressView
    from skill2env_dagster.export.funnel import FailedPartition

    plain = io.StringIO()
    view = ProgressView(plain)  # not a terminal: one line per finished skill
    view.start(3)
    view.done(PartitionOutcome(key="a", status="ran"), SkillCounts(planned=1, created=2, retained=2), "eligible")
    view.done(PartitionOutcome(key="b", status="failed", failure=FailedPartition(
        partition="b", stage="workflow_plans", reason="llm_unavailable")), SkillCounts())
    view.done(PartitionOutcome(key="c", status="ran"), SkillCounts(), "screened out: needs_hardware")
    view.stop()
    lines = plain.getvalue().splitlines()
    assert lines[0].startswith("[1/3] a: ran (eligible, 2 created, 2 retained) · so far: planned 1 · created 2")
    assert lines[1].startswith("[2/3] b: failed (workflow_plans llm_unavailable) · so far:")
    assert lines[1].endswith("failed 1")
    assert lines[2].startswith("[3/3] c: ran (screened out: needs_hardware) · so far: planned 1 · created 2")

    tty = io.StringIO()
    view = ProgressView(tty)
    view.console = Console(file=tty, force_terminal=True, width=100)
    view.interactive, view.plain = True, False
    view.start(1)
    view.done(PartitionOutcome(key="a", status="up_to_date"),
              SkillCounts(planned=1, created=2, retained=1, rejected_by_reason={"oracle_failed": 1}))
    view.stop()
    final = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", tty.getvalue()).split("\r")[-1]
    assert "1/1" in final and "eta" in final
    assert "rejected 1 (oracle_failed 1) · up to date 1 · failed 0" in final


def test_the_progress_line_says_what_the_crawl_decided_for_each_skill():
    from skill2env_dagster.export.funnel import skill_verdict
    from skill2env_dagster.models.skill import SkillRecord, SkillStatus
    from skill2env_dagster.reasons import ReasonCode

    def rec(**kw) -> SkillRecord:
        return SkillRecord.model_validate({"skill_id": "s", "source": "x", "source_kind": "dir", "source_uri": "/x",
                                           "rel_path": "s", "abs_path": "/x/s", "skill_file": "SKILL.md",
                                           "bundle_digest": "0" * 64, **kw})

    assert skill_verdict(None) == "not crawled"
    assert skill_verdict(rec(reasons=[ReasonCode.LICENCE_UNKNOWN])) == "eligible"
    out = rec(status=SkillStatus.SCREENED_OUT, reasons=[ReasonCode.LICENCE_UNKNOWN, ReasonCode.NEEDS_HARDWARE])
    assert skill_verdict(out) == "screened out: needs_hardware"
    assert skill_verdict(rec(status=SkillStatus.INVALID, reasons=[ReasonCode.NO_FRONTMATTER])) == \
        "invalid: no_frontmatter"
    assert skill_verdict(rec(duplicate_of="t")) == "duplicate of t"
