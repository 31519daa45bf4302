"""The labelled screening set is consistent: every entry labelled once with known codes, the recorded split is the
hash split, campaigns never straddle the halves, and the report skips with a message when mirrors are absent."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter, defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from skill2env_dagster.reasons import ReasonCode

SET = Path(__file__).resolve().parents[2] / "benchmarks" / "screening_set"
SCREEN_CODES = {"needs_external_account", "needs_live_service", "needs_hardware", "os_or_gui_specific",
                "persona_only", "no_actionable_content", "malicious", "harmful"}


def _module(name: str):
    sys.path.insert(0, str(SET))
    try:
        spec = importlib.util.spec_from_file_location(name, SET / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses resolve their module by name
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(SET))


@pytest.fixture(scope="module")
def entries():
    return yaml.safe_load((SET / "entries.yaml").read_text())


@pytest.fixture(scope="module")
def labels():
    return yaml.safe_load((SET / "labels.yaml").read_text())


def test_every_entry_is_labelled_once_with_known_codes(entries, labels):
    assert len(entries) >= 300
    assert [e["id"] for e in entries] == [x["id"] for x in labels]
    assert len({e["id"] for e in entries}) == len(entries)
    for x in labels:
        assert set(x["codes"]) <= SCREEN_CODES and all(ReasonCode(c) for c in x["codes"]), x["id"]
        assert x["why"].strip(), x["id"]


def test_recorded_halves_are_the_hash_split_and_campaigns_stay_together(entries):
    select = _module("select_skills")
    halves = defaultdict(set)
    for e in entries:
        assert e["half"] == select.half_of(e["group"]), e["id"]
        assert e["id"].startswith(f"{e['repo']}@{e['commit'][:12]}:{e['path']}")
        halves[e["group"]].add(e["half"])
    assert all(len(h) == 1 for h in halves.values())
    assert {e["half"] for e in entries} == {"tune", "test"}


def test_each_labelling_round_draws_from_hubs_new_to_the_set_and_outside_the_corpus(entries):
    """A later round adds wording the rules have not read: its hubs are new (each repository belongs to one round,
    except the archive round 10 draws from again at round 7's commit, whose skills round 7 did not draw), none is a
    source of ../shared/corpus, and the report knows every round by name (`--round`)."""
    select, evaluate = _module("select_skills"), _module("evaluate")
    rounds = defaultdict(set)
    for e in entries:
        rounds[e["repo"]].add(e.get("round", 1))
    again = {s.repo for s in select.ROUND10_SOURCES}
    assert all(len(r) == 1 for repo, r in rounds.items() if repo not in again)
    assert all(rounds[repo] == {7, 10} for repo in again)
    assert {s.commit for s in select.ROUND10_SOURCES} <= {s.commit for s in select.ROUND7_SOURCES}
    assert len({e["id"] for e in entries}) == len(entries)
    assert not set(rounds) & select.EXCLUDED_REPOS
    assert {e.get("round", 1) for e in entries} <= set(evaluate.ROUND_GROUPS)
    sixth = [e for e in entries if e.get("round") == 6]
    assert {e["repo"] for e in sixth} == {s.repo for s in select.ROUND6_SOURCES}
    assert len(sixth) == sum(s.random for s in select.ROUND6_SOURCES) == 80
    seventh = [e for e in entries if e.get("round") == 7]
    assert {e["repo"] for e in seventh} == {s.repo for s in select.ROUND7_SOURCES}
    assert len(seventh) == sum(s.random for s in select.ROUND7_SOURCES) == 80
    assert evaluate.ROUND_GROUPS[7] == "7"
    eighth = [e for e in entries if e.get("round") == 8]
    assert {e["repo"] for e in eighth} == {s.repo for s in select.ROUND8_SOURCES}
    assert len(eighth) == sum(s.random for s in select.ROUND8_SOURCES) == 100
    assert evaluate.ROUND_GROUPS[8] == "8"
    ninth = [e for e in entries if e.get("round") == 9]
    assert {e["repo"] for e in ninth} == {s.repo for s in select.ROUND9_SOURCES}
    assert Counter(e["pool"] for e in ninth) == {
        **{f"random:{s.repo}": s.random for s in select.ROUND9_SOURCES}, "security": 10}
    assert all(e["half"] == select.half_of(e["group"]) for e in ninth)
    assert evaluate.ROUND_GROUPS[9] == "9"
    tenth = [e for e in entries if e.get("round") == 10]
    assert {e["repo"] for e in tenth} == again
    assert Counter(e["pool"] for e in tenth) == {
        **{f"random:{s.repo}": s.random for s in select.ROUND10_SOURCES}, "devices": 20, "security": 10, "lures": 2}
    assert all(e["half"] == select.half_of(e["group"]) for e in tenth)
    assert evaluate.ROUND_GROUPS[10] == "10"


def test_the_report_skips_with_a_message_without_mirrors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("S2E_MIRROR_DIR", str(tmp_path))
    sys.path.insert(0, str(SET))
    try:
        report = importlib.util.spec_from_file_location("screen_corpus_report", SET.parent / "screen_corpus_report.py")
        mod = importlib.util.module_from_spec(report)
        report.loader.exec_module(mod)
        mod.report_set("test", list_errors=False)
    finally:
        sys.path.remove(str(SET))
    out = capsys.readouterr().out
    assert "screening set skipped: no local mirror for" in out and "AgentWorkers/skills@" in out


def test_the_reports_model_opinion_scores_both_modes_from_one_reply(tmp_path):
    """`screen_corpus_report.py --set --second-opinion`: one call per skill (the loopback fake server here), the
    add-only verdict and the clearing verdict both read from it; a failed call scores as the screen alone."""
    from skill2env_dagster.llm import LLMConfig
    from tests.support.fake_openai import FakeOpenAI, server_error
    from tests.unit.test_screen_second_opinion import KEY_LINE, NOT_NEEDED, OFFLINE_LINE, _record, _reply

    evaluate = _module("evaluate")
    record = _record(tmp_path, "kiln-sync", f"{KEY_LINE}\n\n{OFFLINE_LINE}")
    with FakeOpenAI(lambda body: _reply(not_needed=NOT_NEEDED[:1])) as srv:
        config = LLMConfig(base_url=srv.base_url, model="fake", max_retries=0, max_repairs=0, cache_dir="")
        ask = evaluate.model_opinion(config, tmp_path / "cache")
        got = ask(record)
        assert srv.count == 1
        srv.enqueue(server_error())
        failed = evaluate.model_opinion(config, None)(record)
    assert {k: v for k, v in got.items() if k != evaluate.DISAGREEMENTS} == {
        "adds": {"needs_external_account", "needs_live_service"}, "adds_and_clears": {"needs_live_service"}}
    assert "model_cleared#0" in got[evaluate.DISAGREEMENTS]
    assert failed == {evaluate.OPINION_FAILED: {"needs_external_account", "needs_live_service"}}


def test_target_intervals_resample_whole_groups_and_repeat_exactly():
    """A lure campaign counts once: ten copies of one missed campaign widen the malicious-recall interval as one
    group would, not as ten independent skills; the same input always prints the same interval."""
    evaluate = _module("evaluate")

    def item(n: int, labels: set[str], got: set[str], group: str = "") -> object:
        return evaluate.Item(f"x@c:s{n}", "x", "c", f"s{n}", "random", "test", frozenset(labels), "", 1,
                             group or f"x@c:s{n}", got=frozenset(got))

    caught = [item(n, {"malicious"}, {"malicious"}) for n in range(10)]
    missed_campaign = [item(100 + n, {"malicious"}, set(), group="campaign:one") for n in range(10)]
    items = caught + missed_campaign + [item(200 + n, set(), set()) for n in range(30)]
    value, counts = evaluate.targets(items)["malicious_recall"]
    assert (value, counts) == (0.5, "10/20")
    spans = evaluate.target_intervals(items)
    low, high = spans["malicious_recall"]
    assert low < 0.5 < high
    independent = [item(100 + n, {"malicious"}, set()) for n in range(10)]
    low_i, high_i = evaluate.target_intervals(caught + independent)["malicious_recall"]
    assert high - low > 1.5 * (high_i - low_i)  # 11 groups, one holding half the skills, against 20 groups
    assert spans["eligible_wrongly_screened_out"] == (0.0, 0.0)
    assert spans["hardware_recall"] is None  # no hardware skill at all
    assert evaluate.target_intervals(items) == spans


def test_the_opinion_sample_is_stratified_seeded_and_weighted(tmp_path):
    """issue 28's measurement sample: every eligible skill the screen screens out and every malicious one, seeded
    draws of the needs and of the eligible skills it passes; the same seed gives the same sample; weighted figures
    estimate the whole half (here exactly, since the opinion changes nothing); results carry no id."""
    _module("evaluate")
    sample_mod = _module("opinion_sample")
    evaluate = sys.modules["evaluate"]
    record = SimpleNamespace(body="a readable SKILL.md")

    def item(n: int, labels: set[str], got: set[str]) -> object:
        return evaluate.Item(f"x@c:s{n}", "x", "c", f"s{n}", "random", "test", frozenset(labels), "", 1, "",
                             got=frozenset(got), record=record)

    items = ([item(n, set(), {"needs_live_service"}) for n in range(5)]
             + [item(100 + n, {"needs_live_service"}, {"needs_live_service"} if n % 4 else set()) for n in range(80)]
             + [item(200 + n, {"malicious"}, {"malicious"}) for n in range(3)]
             + [item(300 + n, set(), set()) for n in range(40)])
    sample = sample_mod.draw(items, seed=7)
    assert sample_mod.digest(sample) == sample_mod.digest(sample_mod.draw(items, seed=7))
    assert sample_mod.digest(sample) != sample_mod.digest(sample_mod.draw(items, seed=8))
    sizes = Counter(d.stratum for d in sample)
    assert sizes == {"eligible_screened_out": 5, "needs": sample_mod.NEEDS, "malicious": 3,
                     "eligible_passed": sample_mod.PASSED}
    weight = {d.stratum: d.weight for d in sample}
    assert weight["needs"] == 80 / sample_mod.NEEDS and weight["eligible_passed"] == 40 / sample_mod.PASSED
    parts = [sample_mod.part(sample, k, 3) for k in (1, 2, 3)]
    assert sorted(d.item.id for p in parts for d in p) == sorted(d.item.id for d in sample)
    path = tmp_path / "results.jsonl"
    sample_mod.write_results(path, sample, entry_ids=False)
    assert "x@c:" not in path.read_text()
    results = sample_mod.read_results([path])
    est = sample_mod.figures(results, weighted=True)["eligible_wrongly_screened_out"]["screen"][0]
    assert est == pytest.approx(5 / 45)  # the whole half's rate, from a sample drawn for being screened out
    raw = sample_mod.figures(results, weighted=False)["eligible_wrongly_screened_out"]["screen"]
    assert raw == (5 / (5 + sample_mod.PASSED), f"5/{5 + sample_mod.PASSED}")
