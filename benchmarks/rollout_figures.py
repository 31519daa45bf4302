"""Figures of the whole rollout loop on real containers, driven by scripted models on the loopback fake server.

Usage: .venv/bin/python benchmarks/rollout_figures.py [--attempts 4] [--rounds 2] [--skip-hardening]
Needs the engine, registry and base images (scripts/docker-up.sh; skill2env base-images). Prints one JSON object.

1. Calibration, judge and SFT: three "skills" on the `good_minimal` fixture task, each rolled out by a different
   mix of scripted solvers (tests/support/scripted_agent.py): `easy` (solve x k), `mixed` (solve, half, loop,
   forge, malformed, flood, hardcode), `hard` (loop and forge x k/2 each). Then the rule-based judge, the SFT
   export and the difficulty report: episodes by kind and stop reason, judge agreement with the verifier, the
   judge's scale (Oracle, no-op, solvers), shortcuts, labels, histogram bins, SFT rows and exclusions.
2. Hardening: the `log-triage-awk` example skill, created offline and gated; a policy that replays the task's own
   reference solution makes it `too_easy`; up to `--rounds` hardening rounds (revise, rebuild, gate, roll out,
   judge every episode of the rebuild); the rebuild's row in the difficulty report and its SFT rows.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr

from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.container import client_for
from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.config import LLMConfig
from skill2env_dagster.models.export import DecontamConfig
from skill2env_dagster.models.gate import GateReport
from skill2env_dagster.models.judge import JudgeScores
from skill2env_dagster.models.rollout import RewardForm, SolverRollouts
from skill2env_dagster.rollouts.docker_sandbox import DockerSandboxFactory, OutputLimits
from skill2env_dagster.rollouts.hardening import harden_skill, skill_rebuilder, task_trials
from skill2env_dagster.rollouts.judge import Judge, judge_skill
from skill2env_dagster.rollouts.report import build_report
from skill2env_dagster.rollouts.rolled import rolled_tasks
from skill2env_dagster.rollouts.runner import TaskRef, roll_out_skill
from skill2env_dagster.rollouts.settings import AgentLimits, JudgeSettings, RolloutSettings, SolverConfig
from skill2env_dagster.rollouts.sft import export_sft
from skill2env_dagster.store import ArtifactStore

if TYPE_CHECKING:
    from tests.support.fake_openai import FakeOpenAI
from skill2env_dagster.tasks.generator import OfflineGenerator
from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "tasks" / "good_minimal"
EXAMPLE = ROOT / "examples" / "skillhub" / "log-triage-awk"
RUN_ID = "bench-rollout-figures"


def _endpoint(srv: FakeOpenAI, model: str = "judge") -> LLMConfig:
    return LLMConfig(base_url=srv.base_url, model=model, api_key=SecretStr(""), timeout=30, max_retries=2,
                     backoff_base=0.01, backoff_cap=0.05)


def _settings(solvers: list[tuple[str, int]], hardening_rounds: int = 2) -> RolloutSettings:
    return RolloutSettings(solvers=[SolverConfig(name=n, model=n, attempts=k) for n, k in solvers if k],
                           limits=AgentLimits(max_turns=6, command_timeout_sec=20), judge=JudgeSettings(max_attempts=2),
                           concurrency=2, hardening_rounds=hardening_rounds)


def _mixes(k: int) -> dict[str, list[tuple[str, int]]]:
    return {"easy": [("solve", k)],
            "mixed": [("solve", 1), ("half", 1), ("loop", 1), ("forge", 1), ("malformed", 1), ("flood", 1),
                      ("hardcode", 1)],
            "hard": [("loop", (k + 1) // 2), ("forge", k // 2)]}


def calibration_figures(root: Path, factory: DockerSandboxFactory, attempts: int) -> dict:
    from tests.support.fake_openai import FakeOpenAI
    from tests.support.scripted_agent import responder

    rollouts: dict[str, SolverRollouts] = {}
    scores: dict[str, JudgeScores] = {}
    folders: dict[str, Path] = {}
    start = time.perf_counter()
    with FakeOpenAI(responder()) as srv:
        for skill, mix in _mixes(attempts).items():
            task = root / skill / "count-records"
            shutil.copytree(FIXTURE, task)
            pin_dockerfile(task)
            folders[skill] = root / "rollouts" / skill
            rollouts[skill] = roll_out_skill(skill, [TaskRef("count-records", task)], _settings(mix), _endpoint(srv),
                                             factory, folders[skill])
            judge = Judge(LLMClient(_endpoint(srv)), JudgeSettings(max_attempts=2), RewardForm())
            scores[skill] = judge_skill(rollouts[skill], folders[skill], judge, "figures")
    seconds = time.perf_counter() - start
    tasks = rolled_tasks(rollouts, scores, folders)
    sft = export_sft(tasks, root / "sft", 0.9, DecontamConfig())
    report = build_report(tasks, 0.7)
    episodes = [r for sr in rollouts.values() for r in sr.rollouts()]
    return {
        "episodes": len(episodes), "scored": sum(r.scored for r in episodes),
        "by_kind": dict(Counter(r.kind.value for r in episodes)),
        "by_stop": dict(Counter(r.stop.value for r in episodes)),
        "seconds": round(seconds, 1),
        "judge": report.judge_scale.model_dump(),
        "shortcuts": [s.rollout_id for s in report.shortcuts],
        "labels": {t.skill_id: (t.label, t.mean_reward_v, t.pass_rate) for t in report.tasks},
        "bins": {f"{b.lo:.1f}-{b.hi:.1f}": b.by_label for b in report.bins if b.by_label},
        "sft_rows": sft.rows, "sft_candidates": sft.candidates, "sft_excluded": sft.excluded_by_reason(),
    }


def hardening_figures(root: Path, factory: DockerSandboxFactory, attempts: int, rounds: int) -> dict:
    from tests.support.fake_openai import FakeOpenAI
    from tests.support.scripted_agent import outcome_judge_reply, replay
    from tests.unit.task_helpers import plans_and_axes, skill_from_dir

    store = ArtifactStore(root / "artifacts")
    skill = skill_from_dir(EXAMPLE)
    plans, axes = plans_and_axes(skill, ["run_audit"])

    def gate(path: Path) -> GateReport:
        return gate_task(path, GateSettings(run_id=RUN_ID))

    created, _ = create_tasks_for_skill(store, skill, plans, axes, OfflineGenerator(), gate, load_base_images(),
                                        CreationSettings(max_variants=1))
    original = created.retained()[0]
    script = (Path(original.path) / "solution" / "solve.sh").read_text()
    settings = _settings([("replay", attempts)], hardening_rounds=rounds)
    start = time.perf_counter()
    agent = replay(script)
    with FakeOpenAI(lambda body: agent(body) if body.get("tools") else outcome_judge_reply(body)) as srv:
        endpoint = _endpoint(srv, "replay")
        folder = root / "hardening" / "r0"
        first = roll_out_skill(skill.skill_id, [TaskRef(original.task_name, Path(original.path))], settings,
                               endpoint, factory, folder)
        judge = Judge(LLMClient(endpoint), JudgeSettings(max_attempts=2), RewardForm())
        scores = judge_skill(first, folder, judge, "figures")
        rebuilder = skill_rebuilder(store, skill, plans, axes, created, OfflineGenerator(), gate, load_base_images())
        trials = task_trials(settings, endpoint, factory, root / "hardening", judge=judge)
        result = harden_skill(first, rebuilder, trials, rounds)
    k = skill.skill_id
    tasks = rolled_tasks({k: first}, {k: scores}, {k: folder}, {k: result}, {k: root / "hardening"})
    report = build_report(tasks, 0.7)
    sft = export_sft(tasks, root / "sft", 0.9, DecontamConfig())
    return {"task": original.task_name, "seconds": round(time.perf_counter() - start, 1),
            "report_rows": [(t.task_name, t.hardened_from, t.label, t.judge_calibration, t.oracle_score, t.noop_score,
                             t.solver_mean_score) for t in report.tasks],
            "judged_per_round": [(r.round, len(r.verdicts), sum(x.scored for x in r.rollouts), r.not_judged)
                                 for t in result.tasks for r in t.rounds if r.after is not None],
            "sft_rows_by_task": dict(Counter(json.loads(x)["task"] for x in Path(sft.path).read_text().splitlines())),
            "before": (first.tasks[0].calibration.label, first.tasks[0].calibration.mean_reward_v),
            "outcomes": dict(Counter(t.outcome for t in result.tasks)), "not_needed": result.not_needed,
            "rounds": [{"round": r.round, "revision": r.revision.summary, "retained": r.revision.retained,
                        "before": (r.before.label, r.before.mean_reward_v), "reason": r.revision.reason,
                        "previous_solution_r": r.previous_solution.reward_v if r.previous_solution else None,
                        "after": (r.after.label, r.after.mean_reward_v) if r.after else None}
                       for t in result.tasks for r in t.rounds]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--attempts", type=int, default=4, help="k attempts per solver configuration (default 4)")
    p.add_argument("--rounds", type=int, default=2, help="hardening rounds R (default 2)")
    p.add_argument("--skip-hardening", action="store_true")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))  # the test support: the loopback fake server and the scripted models
    settings = GateSettings(run_id=RUN_ID)
    client_for(settings)
    factory = DockerSandboxFactory(settings, OutputLimits())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = {"calibration": calibration_figures(root / "cal", factory, args.attempts)}
        if not args.skip_hardening:
            out["hardening"] = hardening_figures(root / "hard", factory, args.attempts, args.rounds)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
