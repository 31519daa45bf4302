"""The real-world corpus is benign: no skill may be flagged malicious or harmful (several quote attack text)."""

from __future__ import annotations

import pytest

from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.screen.engine import ScreenSettings, screen_skill
from tests.unit.screen_support import read_skill

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def corpus_findings(corpus_dir, corpus_manifest):
    out = {}
    for entry in corpus_manifest:
        texts, fm, body = read_skill(corpus_dir / entry["id"])
        out[entry["id"]] = (entry, screen_skill(texts, fm, body, ScreenSettings()))
    return out


def test_corpus_has_no_malicious_or_harmful_flags(corpus_findings):
    bad = [(sid, f.rule, f.file, f.line, f.text) for sid, (_, fs) in corpus_findings.items() for f in fs
           if f.code in (ReasonCode.MALICIOUS, ReasonCode.HARMFUL)]
    assert bad == []


def test_corpus_every_skill_screened_with_valid_evidence(corpus_findings):
    assert len(corpus_findings) >= 100
    for sid, (_, findings) in corpus_findings.items():
        for f in findings:
            assert len(f.text) <= 200 and f.line >= 0, sid


def test_corpus_tagged_persona_skill_is_persona_only(corpus_findings):
    tagged = [sid for sid, (e, _) in corpus_findings.items() if "persona_only" in e["quirks"]]
    assert tagged
    for sid in tagged:
        assert ReasonCode.PERSONA_ONLY in {f.code for f in corpus_findings[sid][1]}, sid


def test_corpus_trigger_prechecks_never_hide_a_match(corpus_dir, corpus_manifest, corpus_findings, tmp_path):
    """The Aho-Corasick trigger pre-check is only a speed-up: without triggers every real skill screens the same."""
    import yaml

    from skill2env_dagster.skillhub.screen.rules import DEFAULT_RULES_PATH
    raw = yaml.safe_load(DEFAULT_RULES_PATH.read_text())
    for rule in raw["rules"]:
        rule.pop("triggers", None)
    plain = tmp_path / "rules_no_triggers.yaml"
    plain.write_text(yaml.safe_dump(raw, allow_unicode=True))
    slow_settings = ScreenSettings(rules_path=str(plain))
    for entry in corpus_manifest:
        texts, fm, body = read_skill(corpus_dir / entry["id"])
        assert screen_skill(texts, fm, body, slow_settings) == corpus_findings[entry["id"]][1], entry["id"]
