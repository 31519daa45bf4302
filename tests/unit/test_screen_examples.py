"""Screening verdicts on the bundled example hub match EXPECTED.yaml (screening codes only)."""

from __future__ import annotations

import pytest
import yaml

from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.skillhub.screen.engine import ScreenSettings, blocking_codes, screen_skill
from skill2env_dagster.skillhub.screen.rules import DEFAULT_RULES_PATH
from tests.unit.screen_support import SCREEN_CODES, read_skill


def _expected(examples_dir) -> dict:
    return yaml.safe_load((examples_dir / "EXPECTED.yaml").read_text())["skills"]


def _screen(examples_dir, folder: str, settings: ScreenSettings | None = None):
    texts, fm, body = read_skill(examples_dir / folder)
    return screen_skill(texts, fm, body, settings or ScreenSettings())


def test_expected_file_covers_every_example_folder(examples_dir):
    folders = {p.name for p in examples_dir.iterdir() if p.is_dir()}
    assert folders == set(_expected(examples_dir))
    assert len(folders) >= 16
    domains = {v["domain"] for v in _expected(examples_dir).values() if v["status"] == "eligible"}
    assert len(domains) >= 6


@pytest.mark.parametrize("folder", sorted(yaml.safe_load(
    (DEFAULT_RULES_PATH.parents[2] / "examples" / "skillhub" / "EXPECTED.yaml").read_text())["skills"]))
def test_example_screening_reasons_match_expected(examples_dir, folder):
    exp = _expected(examples_dir)[folder]
    findings = _screen(examples_dir, folder)
    want = {r for r in exp.get("reasons", []) if r in SCREEN_CODES}
    got = {c.value for c in blocking_codes(findings)}
    assert got == want, [(f.code.value, f.rule, f.file, f.line, f.text) for f in findings]
    info_rules = {f.rule for f in findings if f.code in (ReasonCode.STANDIN_POSSIBLE,)}
    assert info_rules == set(exp.get("info", [])) - {"licence_unknown"}


def test_security_skill_quoting_attacks_stays_clean_and_lure_is_flagged_on_many_counts(examples_dir):
    assert not _screen(examples_dir, "skill-injection-detector")
    lure = {f.rule for f in _screen(examples_dir, "weather-helper") if f.code == ReasonCode.MALICIOUS}
    expected = {"mal.pipe_to_shell", "mal.paste_site", "mal.protected_archive", "mal.authorized_keys_write",
                "mal.startup_file_payload", "mal.wallet_fee", "mal.agent_override", "mal.agent_concealment",
                "mal.exfil_substitution", "mal.base64_exec"}
    assert expected <= lure


def test_trigger_prechecks_never_hide_a_match(examples_dir, tmp_path):
    """The same rule book without `triggers` (full-text regex scan) gives identical findings on every example."""
    raw = yaml.safe_load(DEFAULT_RULES_PATH.read_text())
    for rule in raw["rules"]:
        rule.pop("triggers", None)
    plain = tmp_path / "rules_no_triggers.yaml"
    plain.write_text(yaml.safe_dump(raw, allow_unicode=True))
    for folder in sorted(p.name for p in examples_dir.iterdir() if p.is_dir()):
        fast = _screen(examples_dir, folder)
        slow = _screen(examples_dir, folder, ScreenSettings(rules_path=str(plain)))
        assert fast == slow, folder


def test_broken_rule_book_is_a_clear_error(tmp_path):
    from skill2env_dagster.reasons import InputError
    from skill2env_dagster.skillhub.screen.rules import load_rule_book
    raw = yaml.safe_load(DEFAULT_RULES_PATH.read_text())
    raw["rules"][0]["pattern"] = "(unclosed"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(InputError, match="unusable"):
        load_rule_book(bad)
    raw = yaml.safe_load(DEFAULT_RULES_PATH.read_text())
    raw["rules"][0]["code"] = "duplicate_of_something"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(InputError):
        load_rule_book(bad.rename(tmp_path / "bad2.yaml"))
