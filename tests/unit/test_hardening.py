"""The hardening loop: rounds while too_easy, stop on a harder task, on a rejected rebuild, or after R rounds;
a rebuild the previous version's solution still solves is rejected (`hardening_not_harder`) and the next round
tries another pattern on the same version; every round kept; the rebuilt task's task.toml records the history;
the revision moves up a level and adds a pattern whose effect plants new cases, keeping the earlier ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skill2env_dagster.catalogue import load_patterns
from skill2env_dagster.models.axes import AxisSample
from skill2env_dagster.models.hardening import Revision
from skill2env_dagster.models.rollout import Rollout, RolloutKind, StopReason, TaskCalibration
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.hardening import (
    HISTORY_KEY,
    Built,
    Rebuilt,
    SampleRebuilder,
    Trials,
    Version,
    harden_task,
    hardened_name,
    hardening_patterns,
    revise_sample,
)
from skill2env_dagster.rollouts.runner import TaskRef

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "good_minimal"


def _cal(mean: float) -> TaskCalibration:
    label = "too_easy" if mean > 0.7 else ("unsolved" if mean == 0 else "learnable")
    return TaskCalibration(scored=4, unscored=0, pass_rate=mean, mean_reward_v=mean, label=label,
                           label_reason=f"mean r_V {mean}", oracle_passed=True)


class Folders:
    """Rebuilds by copying the fixture; `reject` lists rounds whose rebuild the gates refuse."""

    def __init__(self, root: Path, reject: tuple[int, ...] = ()) -> None:
        self.root, self.reject, self.calls, self.withdrawn = root, reject, [], []

    def rebuild(self, task: TaskRef, round_no: int, why: str) -> Rebuilt:
        self.calls.append((task.name, round_no, why))
        name = hardened_name("t", round_no)
        dest = self.root / name
        shutil.copytree(FIXTURE, dest)
        ok = round_no not in self.reject
        rev = Revision(summary=f"round {round_no}", task_name=name, path=str(dest), retained=ok,
                       reason=None if ok else ReasonCode.ORACLE_FAILED)
        return Rebuilt(rev, TaskRef(name, dest) if ok else None)

    def withdraw(self, task: TaskRef, evidence: str) -> str:
        self.withdrawn.append((task.name, evidence))
        return f"rejected/{task.name}"


def _replayed(r: float | None) -> Rollout:
    return Rollout(rollout_id="x--previous_solution--0", task_name="x", kind=RolloutKind.ORACLE,
                   solver="previous_solution", attempt=0, stop=StopReason.AGENT_DONE, scored=r is not None,
                   reward_v=r, trajectory="x.json", reason=None if r is not None else ReasonCode.CONTAINER_DIED)


def _roll(means: list[float], previous: list[float | None] | None = None) -> Trials:
    """Rollout means per retained round; the previous solution scores 0.5 on every rebuild unless told."""
    it, prev = iter(means), iter(previous or [0.5] * 9)
    return Trials(roll_out=lambda task: ([], _cal(next(it))), replay=lambda old, new: _replayed(next(prev)),
                  too_easy_above=0.7)


def test_rounds_until_the_task_is_no_longer_too_easy(tmp_path):
    rb = Folders(tmp_path)
    h = harden_task(TaskRef("t", tmp_path / "t"), _cal(0.9), rb, _roll([0.8, 0.4]), rounds=3)
    assert [r.round for r in h.rounds] == [1, 2] and h.outcome == "hardened"
    assert (h.final_task, h.final_label) == ("t-h2", "learnable")
    assert [c[0] for c in rb.calls] == ["t", "t-h1"] and rb.calls[0][2] == "mean r_V 0.9"
    meta = TaskToml.from_toml((tmp_path / "t-h2" / "task.toml").read_text()).metadata[HISTORY_KEY]
    assert [m["round"] for m in meta] == [1, 2] and meta[1]["label_after"] == "learnable"
    assert meta[0]["from_task"] == "t" and meta[0]["mean_reward_v_before"] == 0.9
    assert meta[0]["previous_solution_reward_v"] == 0.5
    assert h.rounds[0].revision.evidence.startswith("previous solution on new task: r=0.50")


def test_a_rebuild_the_previous_solution_still_solves_is_rejected(tmp_path):
    rb = Folders(tmp_path)
    h = harden_task(TaskRef("t", tmp_path / "t"), _cal(1.0), rb, _roll([0.4], previous=[0.9, None, 0.3]), rounds=3)
    first, second, third = h.rounds
    for r in (first, second):  # still solved, or not shown to be unsolved: the previous version stands
        assert not r.revision.retained and r.revision.reason is ReasonCode.HARDENING_NOT_HARDER and r.after is None
    assert "r=0.90 (not ≤ 0.7: not harder)" in first.revision.evidence
    assert "not scored (container_died)" in second.revision.evidence
    assert [c[0] for c in rb.calls] == ["t", "t", "t"]  # every round revises the last version that counted
    assert [w[0] for w in rb.withdrawn] == ["t-h1", "t-h2"] and first.revision.path == "rejected/t-h1"
    assert third.revision.retained and h.outcome == "hardened" and h.final_task == "t-h3"
    meta = TaskToml.from_toml((tmp_path / "t-h3" / "task.toml").read_text()).metadata[HISTORY_KEY]
    assert [(m["round"], m["retained"]) for m in meta] == [(1, False), (2, False), (3, True)]
    assert meta[0]["reason"] == "hardening_not_harder"
    h = harden_task(TaskRef("t", tmp_path / "t"), _cal(1.0), Folders(tmp_path / "n"), _roll([], [1.0]), rounds=1)
    assert h.outcome == "not_harder" and h.final_task == "t"


def test_r_rounds_at_most_and_a_rejected_rebuild_ends_it(tmp_path):
    h = harden_task(TaskRef("t", tmp_path / "t"), _cal(1.0), Folders(tmp_path / "a"), _roll([0.9, 0.9, 0.9]),
                    rounds=2)
    assert len(h.rounds) == 2 and h.outcome == "still_too_easy" and h.final_task == "t-h2"
    h = harden_task(TaskRef("t", tmp_path / "t"), _cal(1.0), Folders(tmp_path / "b", reject=(2,)), _roll([0.9]),
                    rounds=3)
    assert h.outcome == "rebuild_rejected" and len(h.rounds) == 2 and h.rounds[1].after is None
    assert h.final_task == "t-h1" and h.rounds[1].revision.reason is ReasonCode.ORACLE_FAILED


def _sample(**kw) -> AxisSample:
    base = {"variant": 0, "workflow": "w", "archetype": "data_query", "primary_verifier_pattern": "exact_state",
            "complexity": "easy", "persona": "data_analyst", "tone": "imperative_brief", "expertise": "practitioner",
            "capability_dimension": "planning", "difficulty_pattern": "p1", "from_pool": True, "seed": 7}
    return AxisSample(**{**base, **kw})


def test_a_revision_is_one_level_up_with_one_more_pattern():
    revised, summary = revise_sample(_sample(), ["p1", "p2", "p3"])
    assert revised.complexity == "medium" and revised.difficulty_pattern == "p1" and revised.added_patterns == ["p2"]
    assert summary == "complexity easy → medium; + pattern p2"
    again, _ = revise_sample(revised, ["p2", "p3"])
    assert again.added_patterns == ["p2", "p3"]  # earlier patterns stay in play
    top, _ = revise_sample(_sample(complexity="complex"), ["p1"])
    assert (top.complexity, top.added_patterns) == ("complex", [])


def test_candidate_patterns_plant_an_effect_not_in_play():
    pool = load_patterns()
    s = _sample(archetype="audit_report", capability_dimension="environment_understanding",
                difficulty_pattern="facts-split-across-sources")
    found = hardening_patterns(s, pool, {"split_sources", "precondition", "dependent", "boundary"}, {"split_sources"})
    effects = [pool.by_id(p).effect for p in found]
    assert effects == ["precondition", "dependent", "boundary"]  # planting effects first, one pattern each
    assert pool.by_id(found[0]).dimension == "environment_understanding"  # the sample's dimension first
    assert all(pool.by_id(p).dimension == "environment_understanding"
               for p in hardening_patterns(s, pool, None, set()))  # no shape known: the dimension's patterns


def test_the_sample_rebuilder_revises_from_the_last_round(tmp_path):
    made: list[tuple[str, str, list[str], str | None]] = []

    def create(sample, name, shape):
        made.append((name, sample.complexity, sample.added_patterns, shape))
        return Built(True, str(tmp_path / name))

    def patterns(v, tried):
        return [p for p in ["p2", "p3", "p4"] if p not in tried]

    rb = SampleRebuilder({"t": Version(_sample(), "t", "run_audit")}, patterns, create)
    first = rb.rebuild(TaskRef("t", tmp_path / "t"), 1, "why")
    second = rb.rebuild(first.task, 2, "why")
    assert made == [("t-h1", "medium", ["p2"], "run_audit"), ("t-h2", "hard", ["p2", "p3"], "run_audit")]
    assert second.revision.complexity_before == "medium" and second.revision.patterns_added == ["p3"]
    third = rb.rebuild(first.task, 3, "why")  # round 2 did not count: revise round 1's version again
    assert made[-1][:3] == ("t-h3", "hard", ["p2", "p4"]) and third.revision.patterns_added == ["p4"]
    with pytest.raises(KeyError):
        rb.rebuild(TaskRef("unknown", tmp_path), 1, "why")


def test_every_episode_of_a_retained_rebuild_is_judged(tmp_path):
    from skill2env_dagster.models.judge import TaskJudgement
    from skill2env_dagster.rollouts.judge import TaskJudged

    seen = []

    def judge(task, rollouts, cal, origin):
        seen.append((task.name, origin))
        return TaskJudged([], TaskJudgement(task_name=task.name, calibration="ok", judge_term=True,
                                            hardened_from=origin), [], {})

    base = _roll([0.8, 0.4])
    trials = Trials(roll_out=base.roll_out, replay=base.replay, too_easy_above=0.7, judge=judge)
    h = harden_task(TaskRef("t", tmp_path / "t"), _cal(0.9), Folders(tmp_path), trials, rounds=3)
    assert seen == [("t-h1", "t"), ("t-h2", "t-h1")]
    assert [r.judgement.hardened_from for r in h.rounds] == ["t", "t-h1"]
    unjudged = harden_task(TaskRef("t", tmp_path / "u"), _cal(0.9), Folders(tmp_path / "u"), _roll([0.4]), rounds=1)
    assert (unjudged.rounds[0].judgement, unjudged.rounds[0].not_judged) == (None, "no_model")
