"""The creator agent end to end on the real engine, driven by a scripted model through the loopback OpenAI server:
draft, self-check in the workbench, the gate's pre-freeze check, freeze, a refused edit of the tests, a solution
repair after the final gate's Oracle failed, the whole gate, submit, retained. A first candidate whose verifier
the gate finds weak after its freeze is replaced by a second one that was shown the gate's evidence."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from skill2env_dagster.creator import CreatorAgent, CreatorLimits
from skill2env_dagster.creator.lab import DockerLab
from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.freeze import compute_freeze_hash
from skill2env_dagster.gates.reap import add_guard
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm import LLMConfig
from skill2env_dagster.llm.tools import ToolChat
from skill2env_dagster.models.atif import AtifTrajectory
from skill2env_dagster.models.gate import CheckVerdict
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill
from tests.docker.conftest import RUN_ID
from tests.support.fake_openai import FakeOpenAI
from tests.support.scripted_creator import TEST_SH, creator_reply
from tests.unit.task_helpers import plans_and_axes, skill_from_dir

pytestmark = pytest.mark.docker


def _create(examples_dir: Path, tmp_path: Path, weak_first: bool):
    """Both scripts try the whole gate before the freeze (`check` with the reference solution)."""
    skill = skill_from_dir(examples_dir / "log-triage-awk")
    plans, axes = plans_and_axes(skill)
    axes = axes.model_copy(update={"samples": axes.samples[:1]})
    settings = GateSettings(run_id=RUN_ID)
    with FakeOpenAI(lambda body: creator_reply(body, weak_first=weak_first, trial=True)) as srv:
        chat = ToolChat(LLMConfig(base_url=srv.base_url, model="scripted", cache_dir=""))
        # The weak script freezes its weak verifier although its trial rejects it: only a harness with the trial
        # requirement off lets it (tests/unit covers the refused freeze); this covers the final gate's replacement.
        limits = CreatorLimits(max_candidates=2, strict=not weak_first)
        agent = CreatorAgent(chat, "scripted", "pv", DockerLab(settings), settings, limits)
        result, reports = create_tasks_for_skill(ArtifactStore(tmp_path / "store"), skill, plans, axes, agent,
                                                 lambda p: gate_task(p, settings), load_base_images(),
                                                 CreationSettings(max_variants=1))
        bodies = [r.body for r in srv.requests]
    (bundle,) = result.bundles
    return bundle, reports.get(bundle.task_name), bodies, result


def _results(trajectory: str) -> list[str]:
    t = AtifTrajectory.model_validate_json(Path(trajectory).read_text())
    return [r.content for s in t.steps if s.observation for r in s.observation.results]


def test_a_scripted_creator_drives_the_whole_loop_to_a_retained_task(docker_client, examples_dir, tmp_path):
    b, report, bodies, result = _create(examples_dir, tmp_path, weak_first=False)
    assert b.status == "retained", (b.reasons, b.evidence)
    (run,) = b.creator
    assert (run.stop, run.turns, run.repairs, run.refusals) == ("submitted", 5, 1, {"order": 1, "frozen": 1})
    results = _results(run.trajectory)
    run_output = next(r for r in results if r.startswith("[exit code 0]"))
    honest, empty = [json.loads(x) for x in run_output.split("\n")[2:4]]
    assert honest == {"endpoints_correct": 1.0, "list_exact": 1} and empty == {"endpoints_correct": 0,
                                                                               "list_exact": 0}
    precheck = next(r for r in results if r.startswith("static checks: pass"))
    assert "no-op (test.sh on the untouched environment)" in precheck and "ok, every metric 0" in precheck
    trial = precheck.split("--- the whole gate on a throw-away copy", 1)[1]
    assert "gate verdict: retained" in trial and "Oracle metrics: {'endpoints_correct': 1.0" in trial
    assert any(r.startswith("refused: tests/test.sh is frozen") for r in results)
    assert any("FAIL oracle (oracle_failed)" in r and "A solution bug" in r for r in results)
    task = Path(b.path)
    assert (task / "tests" / "test.sh").read_text() == add_guard(TEST_SH)  # the freeze adds the guard
    assert compute_freeze_hash(task) == b.freeze_hash
    assert report is not None and report.oracle == {"endpoints_correct": 1.0, "list_exact": 1.0}
    assert sorted(a.name for a in report.cheats) == ["cheats/every_path.sh", "cheats/query_kept.sh"]
    # the answer-key probe and the site-hook attack are skipped where nothing applies (no program, no Python)
    assert all(a.verdict is CheckVerdict.PASS or (a.verdict is CheckVerdict.SKIPPED and a.name in
               ("answer_key", "forge:site_hooks")) for a in report.cheats + report.tamper), report.tamper
    assert b.creation_gate is not None and result.usage.calls == 5
    assert b.blueprint is not None and b.blueprint.axes.pattern_fallback_reason == ""  # the sampled pattern
    assert len(bodies) == 5 and all(body["tools"] for body in bodies)


def test_a_weak_verifier_is_replaced_never_shipped(docker_client, examples_dir, tmp_path):
    b, _, bodies, _ = _create(examples_dir, tmp_path, weak_first=True)
    assert b.status == "retained" and [r.status for r in b.creator] == ["rejected", "retained"]
    first = b.creator[0]
    assert first.frozen and first.reasons[0] in (ReasonCode.SHORTCUT_PASSED, ReasonCode.VERIFIER_INSENSITIVE)
    assert "/rejected/" in first.path and Path(first.path, "rejection.json").is_file()
    trial = next(r for r in _results(first.trajectory) if "--- the whole gate on a throw-away copy" in r)
    assert "gate verdict: rejected" in trial  # the weakness was visible before the freeze
    second_brief = next(body for body in bodies if "A previous candidate" in body["messages"][1]["content"])
    assert "the gate's evidence" in second_brief["messages"][1]["content"]
    assert (Path(b.path) / "tests" / "test.sh").read_text() == add_guard(TEST_SH)  # the freeze adds the guard


def test_a_command_that_kills_the_workbench_gets_a_fresh_one(docker_client, tmp_path):
    """Seen with a capable model: a test.sh that swept every process stopped the workbench container mid-command.
    The command's result says so and the next command runs in a fresh container; nothing crashes."""
    from skill2env_dagster.creator.lab import DockerLab as Lab

    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "Dockerfile").write_text(f"FROM {load_base_images()['minimal']}\nWORKDIR /app\n")
    (tmp_path / "task.toml").write_text((Path(__file__).parents[1] / "fixtures" / "tasks" / "good_minimal" /
                                         "task.toml").read_text())
    bench = Lab(GateSettings(run_id=RUN_ID)).workbench(tmp_path, None)
    try:
        assert bench.run("echo up > /app/x", 30).result.exit_code == 0
        killed = bench.run("kill -9 -1", 30)
        assert killed.result.exit_code is None and "workbench container stopped" in killed.note
        again = bench.run("cat /app/x 2>&1; echo alive", 30)
        assert again.result.exit_code == 0 and b"alive" in again.result.head and b"up" not in again.result.head
        # Killed after the command returned (seen: a background sweep): keep_file says so instead of crashing.
        # The sweep waits for a marker the test writes once the command has returned, not for a delay.
        assert bench.run("echo y > /tmp/y; (until [ -e /tmp/go ]; do sleep 0.05; done; kill -9 -1) >/dev/null 2>&1 &",
                         30).result.exit_code == 0
        trial = bench._sb.sandbox.trial
        trial.box.exec_run(["touch", "/tmp/go"])
        deadline = time.monotonic() + 120
        while trial.alive():
            assert time.monotonic() < deadline, "the background sweep never ran"
            time.sleep(0.05)
        with pytest.raises(ValueError, match="workbench container has stopped"):
            bench.fetch("/tmp/y", 1024)
        with pytest.raises(ValueError, match="no workbench container is running"):
            bench.fetch("/tmp/y", 1024)
        assert bench.run("echo back", 30).result.exit_code == 0
    finally:
        bench.close()
