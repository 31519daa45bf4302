"""How often one hardening round defeats the previous version's solution, per shape, on real containers.

Usage: .venv/bin/python benchmarks/hardening_figures.py [--rounds 1] [SKILL:SHAPE ...]
Needs the engine, registry and base images (scripts/docker-up.sh; skill2env base-images). Prints one JSON object.

Per (example skill, shape): the task is created offline at `easy` and gated; then up to `--rounds` hardening
rounds, each revised by the rebuilder (next level + one planting pattern), rebuilt through the frozen creator
order and the gates, and checked the way `task_hardening` checks it: the previous version's solution/solve.sh
(a stand-in for a policy that learned it) is run on the rebuild in a fresh hardened container and its verifier
reward must be at most the too_easy threshold. No model is involved, so no rollouts: the replay is the policy.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.container import client_for
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import GateReport
from skill2env_dagster.rollouts.docker_sandbox import DockerSandboxFactory, OutputLimits
from skill2env_dagster.rollouts.hardening import harder_check, skill_rebuilder
from skill2env_dagster.rollouts.runner import TaskRef, replay_solution
from skill2env_dagster.rollouts.settings import RolloutSettings
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.generator import OfflineGenerator
from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "skillhub"
RUN_ID = "bench-hardening-figures"
DEFAULT = ["log-triage-awk:run_audit", "csv-dedupe:entry_audit", "csv-dedupe:entry_checker",
           "csv-dedupe:entry_normaliser", "sql-formatter-gpl:checklist_audit", "csv-dedupe:table_cases",
           "log-triage-awk:run_resume"]


def one(root: Path, skill_name: str, shape: str, rounds: int, factory: DockerSandboxFactory) -> dict:
    import sys
    sys.path.insert(0, str(ROOT))
    from tests.unit.task_helpers import plans_and_axes, skill_from_dir

    def gate(path: Path) -> GateReport:
        return gate_task(path, GateSettings(run_id=RUN_ID))

    store, start = ArtifactStore(root / "artifacts"), time.perf_counter()
    skill = skill_from_dir(EXAMPLES / skill_name)
    plans, axes = plans_and_axes(skill, [shape], "easy")
    created, _ = create_tasks_for_skill(store, skill, plans, axes, OfflineGenerator(), gate, load_base_images(),
                                        CreationSettings(max_variants=1))
    if not created.retained():
        return {"shape": shape, "error": f"original not retained: {created.bundles[0].reasons}"}
    original = created.retained()[0]
    rebuilder = skill_rebuilder(store, skill, plans, axes, created, OfflineGenerator(), gate, load_base_images())
    settings = RolloutSettings()
    current, out = TaskRef(original.task_name, Path(original.path)), []
    for n in range(1, rounds + 1):
        rebuilt = rebuilder.rebuild(current, n, "benchmark")
        row: dict = {"round": n, "revision": rebuilt.revision.summary, "gates": rebuilt.revision.retained,
                     "reason": rebuilt.revision.reason}
        if rebuilt.task is not None:
            prev = replay_solution(current, rebuilt.task, settings, factory, root / "replays")
            rev = harder_check(rebuilt.revision, prev, settings.too_easy_above)
            row |= {"previous_solution_r": prev.reward_v, "harder": rev.retained, "evidence": rev.evidence[:90]}
            if rev.retained:
                current = rebuilt.task
        out.append(row)
    return {"skill": skill_name, "shape": original.recipe, "task": original.task_name, "rounds": out,
            "seconds": round(time.perf_counter() - start, 1)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("pairs", nargs="*", default=DEFAULT, help="SKILL:SHAPE (example skill, offline shape)")
    args = p.parse_args()
    settings = GateSettings(run_id=RUN_ID)
    client_for(settings)
    factory = DockerSandboxFactory(settings, OutputLimits())
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, pair in enumerate(args.pairs):
            skill, shape = pair.split(":")
            results.append(one(Path(tmp) / str(i), skill, shape, args.rounds, factory))
            print(json.dumps(results[-1]), flush=True)
    firsts = [r["rounds"][0] for r in results if r.get("rounds")]
    print(json.dumps({"shapes": len(results), "first_round_harder": sum(bool(f.get("harder")) for f in firsts),
                      "first_round_gated": sum(bool(f["gates"]) for f in firsts)}))


if __name__ == "__main__":
    main()
