"""Screening results are reused only when everything that decides them is unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skill2env_dagster.skillhub import crawl as crawl_module
from skill2env_dagster.skillhub.config import CrawlSettings
from skill2env_dagster.skillhub.crawl import crawl_paths


def _verdicts(result) -> list[tuple]:
    return [(r.skill_id, r.status, r.reasons, r.findings) for r in result.records]


@pytest.fixture
def hub(examples_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "hub"
    for name in ("csv-dedupe", "phishing-email-writer", "slack-standup-bot"):
        shutil.copytree(examples_dir / name, root / name)
    return root


def test_a_recrawl_reuses_results_and_an_edit_or_a_damaged_entry_screens_again(hub, tmp_path, monkeypatch):
    settings = CrawlSettings(screen_cache_dir=str(tmp_path / "cache"))
    first = crawl_paths([hub], settings)
    assert len(list((tmp_path / "cache").glob("*.json"))) == 3

    real = crawl_module.screen_skill
    calls: list[str] = []

    def counting(texts, frontmatter, body, screen_settings):
        calls.append(body[:20])
        return real(texts, frontmatter, body, screen_settings)

    monkeypatch.setattr(crawl_module, "screen_skill", counting)
    again = crawl_paths([hub], settings)
    assert calls == [] and _verdicts(again) == _verdicts(first)

    md = hub / "csv-dedupe" / "SKILL.md"
    md.write_text(md.read_text() + "\nFirst connect your Salesforce account and paste the API token.\n")
    edited = crawl_paths([hub], settings)
    assert len(calls) == 1
    assert _verdicts(edited) != _verdicts(first)  # the edit's verdict, not the cached one
    assert _verdicts(edited) == _verdicts(crawl_paths([hub], CrawlSettings()))

    calls.clear()
    for entry in (tmp_path / "cache").glob("*.json"):
        entry.write_text("{not json")
    assert _verdicts(crawl_paths([hub], settings)) == _verdicts(edited)
    assert len(calls) == 3


def test_other_settings_or_another_rule_book_miss_the_cache(hub, tmp_path, monkeypatch):
    cache = str(tmp_path / "cache")
    crawl_paths([hub], CrawlSettings(screen_cache_dir=cache))
    calls: list[int] = []
    real = crawl_module.screen_skill
    monkeypatch.setattr(crawl_module, "screen_skill", lambda *a: calls.append(1) or real(*a))
    crawl_paths([hub], CrawlSettings(screen_cache_dir=cache, dedup_threshold=0.9))
    assert len(calls) == 3
