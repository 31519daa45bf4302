"""The hardening loop: rounds while too_easy, stop on a harder task, on a rejected rebuild, or after R rounds;
every round kept; the rebuilt task's task.toml records the history; the revision moves up a level and adds a
pattern of the same capability dimension."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from skill2env_dagster.models.axes import AxisSample
from skill2env_dagster.models.hardening import Revision
from skill2env_dagster.models.rollout import TaskCalibration
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.hardening import (
    HISTORY_KEY,
    Rebuilt,
    SampleRebuilder,
    harden_task,
    hardened_name,
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
        self.root, self.reject, self.calls = root, reject, []

    def rebuild(self, task: TaskRef, round_no: int, why: str) -> Rebuilt:
        self.calls.append((task.name, round_no, why))
        name = hardened_name("t", round_no)
        dest = self.root / name
        shutil.copytree(FIXTURE, dest)
        ok = round_no not in self.reject
        rev = Revision(summary=f"round {round_no}", task_name=name, path=str(dest), retained=ok,
                       reason=None if ok else ReasonCode.ORACLE_FAILED)
        return Rebuilt(rev, TaskRef(name, dest) if ok else None)


def _roll(means: list[float]):
    it = iter(means)
    return lambda task: ([], _cal(next(it)))


def test_rounds_until_the_task_is_no_longer_too_easy(tmp_path):
    rb = Folders(tmp_path)
    h = harden_task(TaskRef("t", tmp_path / "t"), _cal(0.9), rb, _roll([0.8, 0.4]), rounds=3)
    assert [r.round for r in h.rounds] == [1, 2] and h.outcome == "hardened"
    assert (h.final_task, h.final_label) == ("t-h2", "learnable")
    assert [c[0] for c in rb.calls] == ["t", "t-h1"] and rb.calls[0][2] == "mean r_V 0.9"
    meta = TaskToml.from_toml((tmp_path / "t-h2" / "task.toml").read_text()).metadata[HISTORY_KEY]
    assert [m["round"] for m in meta] == [1, 2] and meta[1]["label_after"] == "learnable"
    assert meta[0]["from_task"] == "t" and meta[0]["mean_reward_v_before"] == 0.9


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
    revised, summary = revise_sample(_sample(), ["p1", "p2", "p3"], 1)
    assert revised.complexity == "medium" and revised.difficulty_pattern in ("p2", "p3")
    assert summary.startswith("complexity easy → medium; + pattern")
    top, _ = revise_sample(_sample(complexity="complex"), ["p1"], 1)
    assert (top.complexity, top.difficulty_pattern) == ("complex", "p1")


def test_the_sample_rebuilder_revises_from_the_last_round(tmp_path):
    made: list[tuple[str, str, str]] = []

    def create(sample, name):
        made.append((name, sample.complexity, sample.difficulty_pattern))
        return True, str(tmp_path / name), [], []

    rb = SampleRebuilder({"t": _sample()}, lambda s: ["p1", "p2", "p3"], create)
    first = rb.rebuild(TaskRef("t", tmp_path / "t"), 1, "why")
    second = rb.rebuild(first.task, 2, "why")
    assert [m[:2] for m in made] == [("t-h1", "medium"), ("t-h2", "hard")]
    assert sorted(m[2] for m in made) == ["p2", "p3"]  # each round a pattern not used before
    assert second.revision.complexity_before == "medium" and len(first.revision.patterns_added) == 1
    with pytest.raises(KeyError):
        rb.rebuild(TaskRef("unknown", tmp_path), 1, "why")
