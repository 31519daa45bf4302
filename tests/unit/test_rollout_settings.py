"""Rollout settings: the example file shows the defaults, bad files are named, endpoints fall back, and the
fingerprints that feed the code versions say offline when no model is configured."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.reasons import InputError
from skill2env_dagster.resources.rollouts import RolloutsResource
from skill2env_dagster.rollouts.settings import (
    RolloutSettings,
    SolverConfig,
    judge_endpoint,
    judge_fingerprint,
    load_settings,
    solver_endpoint,
    solver_fingerprint,
)

ONLINE = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key=SecretStr("k"))


def test_the_example_file_holds_exactly_the_defaults(repo_root):
    assert load_settings(repo_root / "config" / "rollouts.example.yaml") == RolloutSettings()


def test_bad_files_name_the_file_and_the_variable(tmp_path, monkeypatch):
    bad = tmp_path / "r.yaml"
    bad.write_text("solvers: [{name: Bad Name}]\n")
    monkeypatch.setenv("S2E_ROLLOUTS", str(bad))
    with pytest.raises(InputError, match="S2E_ROLLOUTS") as err:
        load_settings()
    assert str(bad) in str(err.value)
    with pytest.raises(InputError, match="unreadable"):
        load_settings(tmp_path / "missing.yaml")
    with pytest.raises(ValidationError, match="unique"):
        RolloutSettings(solvers=[SolverConfig(name="a"), SolverConfig(name="a")])


def test_endpoints_fall_back_to_the_default(monkeypatch):
    monkeypatch.setenv("OTHER_KEY", "sk-other")
    s = SolverConfig(name="big", base_url="http://127.0.0.1:8/v1", model="big", api_key_env="OTHER_KEY",
                     temperature=1.0)
    e = solver_endpoint(s, ONLINE)
    assert (e.base_url, e.model, e.api_key.get_secret_value(), e.temperature) == ("http://127.0.0.1:8/v1", "big",
                                                                                   "sk-other", 1.0)
    d = solver_endpoint(SolverConfig(name="d"), ONLINE)
    assert (d.base_url, d.model, d.api_key.get_secret_value()) == (ONLINE.base_url, "m", "k")
    judge = RolloutsResource(judge_model="judge-model").judge_default(ONLINE)
    assert judge_endpoint(RolloutSettings().judge, judge).model == "judge-model"
    assert judge_endpoint(RolloutSettings().judge, ONLINE).temperature == 0.0


def test_fingerprints_are_offline_without_a_model_and_never_hold_keys():
    assert solver_fingerprint(RolloutSettings(), LLMConfig()) == {"generator": "offline"}
    assert judge_fingerprint(RolloutSettings(), LLMConfig()) == {"generator": "offline"}
    online = solver_fingerprint(RolloutSettings(), ONLINE)
    assert online["solvers"][0]["model"] == "m" and online["solvers"][0]["attempts"] == 4
    assert "k" not in str(judge_fingerprint(RolloutSettings(), ONLINE)).split("'")
    assert judge_fingerprint(RolloutSettings(), ONLINE)["reward"]["form"] == "additive"


@pytest.mark.parametrize("name", ["oracle", "noop", "previous_solution", "fast--1"])
def test_a_solver_cannot_take_a_references_id_or_the_id_separator(name):
    """A solver named `oracle` had the rollout id of the Oracle reference (`task--oracle--0`): the same trajectory
    file, overwritten, and one verdict for two episodes. `--` in a name would let two tasks' ids meet."""
    with pytest.raises(ValidationError, match=r"reserved for a reference|may not contain '--'"):
        SolverConfig(name=name)


def test_rollout_ids_name_one_episode_of_one_task():
    from skill2env_dagster.rollouts.runner import TaskRef, plan_jobs

    tasks = [TaskRef("skills__x--audit-v0", Path("a")), TaskRef("skills__x--audit-v0-h1", Path("b")),
             TaskRef("skills__x", Path("c")), TaskRef("skills__x--audit", Path("d"))]
    settings = RolloutSettings(solvers=[SolverConfig(name="audit-v0", attempts=2), SolverConfig(name="v0", attempts=2),
                                        SolverConfig(name="m", attempts=1)])
    ids = [j.spec.rollout_id for j in plan_jobs(tasks, settings, ONLINE)]
    assert len(ids) == 4 * (2 + 2 + 2 + 1) and len(set(ids)) == len(ids)
