"""The judge's scale on a finished `skill2env run --rollouts`, re-measured with today's Oracle and another judge.

Usage:
  S2E_LLM_BASE_URL=http://127.0.0.1:PORT/v1 S2E_LLM_MODEL=relay-judge S2E_LLM_TIMEOUT=14400 S2E_LLM_MAX_RETRIES=0 \\
    .venv/bin/python benchmarks/judge_references.py RUN/artifacts --out OUT_DIR [--fake-judge]

For every task of the run (its retained tasks and every retained hardening rebuild) the Oracle reference is rolled
out again with the current code (`rollouts/policy.py`: it looks at the inputs, runs solve.sh's steps, looks at its
outputs and runs a program it wrote on the sample; no model is asked), then judged together with the run's own
no-op episode by the judge at `S2E_LLM_*` (an independent judge: another answering agent on its own llmrelay queue).
Two judge requests per task. Writes OUT_DIR/judge_references.json (per task: the scores, the scale's verdict, the
judge's summaries; the means) and the trajectories under OUT_DIR/trajectories/, and prints the means.
`--fake-judge` answers from the loopback fake server with a rule-based judge (tests/support), to check the path end
to end without a model.

Needs the engine, registry and base images (scripts/docker-up.sh) and the run's task folders where it left them.
Run it with this checkout's own venv: it refuses to run when `skill2env_dagster` is imported from another checkout
(a venv's editable install points at the worktree it was made in; one figure was measured with an older Oracle that
way), and lists in `oracle_unprobed` any task whose Oracle read its inputs without the probe.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

from pydantic import SecretStr

import skill2env_dagster
from skill2env_dagster.artifacts import HARDENING, ROLLOUTS
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.config import LLMConfig, from_env
from skill2env_dagster.models.rollout import Rollout, RolloutKind, TaskCalibration, TaskRollouts
from skill2env_dagster.rollouts.docker_sandbox import DockerSandboxFactory, OutputLimits
from skill2env_dagster.rollouts.episode import EpisodeSpec
from skill2env_dagster.rollouts.judge import Judge, judge_task
from skill2env_dagster.rollouts.policy import OraclePolicy
from skill2env_dagster.rollouts.runner import Job, TaskRef, reference_limits, rollout_id, run_jobs
from skill2env_dagster.rollouts.settings import RolloutSettings
from skill2env_dagster.store import ArtifactStore


def run_tasks(store: ArtifactStore) -> list[tuple[TaskRef, Rollout, Path]]:
    """(task, the run's no-op episode, the folder holding its files) for every task and retained rebuild."""
    out = []
    for key in sorted(store.keys(ROLLOUTS)):
        for t in store.load(ROLLOUTS, key).tasks:
            noop = next(r for r in t.rollouts if r.kind is RolloutKind.NOOP)
            out.append((TaskRef(t.task_name, Path(t.path)), noop, store.dir(ROLLOUTS, key)))
        if store.exists(HARDENING, key):
            for th in store.load(HARDENING, key).tasks:
                for r in th.rounds:
                    if r.after is None:
                        continue
                    noop = next(x for x in r.rollouts if x.kind is RolloutKind.NOOP)
                    out.append((TaskRef(r.revision.task_name, Path(r.revision.path)), noop,
                                store.dir(HARDENING, key) / r.revision.task_name))
    return out


def same_checkout() -> None:
    """Refuse to measure another checkout's code: a venv's editable install points at the worktree it was made
    in, so `OTHER/.venv/bin/python benchmarks/judge_references.py` silently ran OTHER's (older) Oracle. Agent M's
    figure was measured that way: its requests show the inspection of 6681d6c, not the one of the commit run."""
    here = Path(__file__).resolve().parents[1]
    used = Path(skill2env_dagster.__file__).resolve().parents[1]
    if used != here:
        sys.exit(f"judge_references: this script is in {here} but imports skill2env_dagster from {used}; "
                 f"run it with {here}/.venv/bin/python (or reinstall that venv) so the code measured is this one")


def oracle_job(task: TaskRef, settings: RolloutSettings, policies: list[OraclePolicy]) -> Job:
    """The Oracle's episode alone, as `runner.plan_jobs` plans it (a reference needs no model); each policy made
    is kept in `policies`, so that the row can say whether its inspection had the probe."""
    kind = RolloutKind.ORACLE
    spec = EpisodeSpec(task.name, task.path, rollout_id(task.name, kind.value, 0), 0, reference_limits(settings),
                       None, settings.judge.diff_chars)

    def make() -> OraclePolicy:
        policies.append(OraclePolicy())
        return policies[-1]

    return Job(task, spec, make, kind, kind.value, "")


def judge_references(store: ArtifactStore, out_dir: Path, judge: Judge, factory: DockerSandboxFactory) -> dict:
    settings = RolloutSettings()
    rows = []
    for task, noop, noop_folder in run_tasks(store):
        folder = out_dir / "trajectories" / task.name
        shutil.rmtree(folder, ignore_errors=True)
        policies: list[OraclePolicy] = []
        oracle = run_jobs([oracle_job(task, settings, policies)], factory, folder, 1)[0]
        for name in (noop.trajectory, noop.workspace):
            if name:
                shutil.copy(noop_folder / name, folder / name)
        cal = TaskCalibration(scored=0, unscored=0, label="uncalibrated", label_reason="references only",
                              oracle_passed=oracle.passed)
        judged = judge_task(TaskRollouts(task_name=task.name, path=str(task.path), rollouts=[oracle, noop],
                                         calibration=cal), folder, judge)
        rows.append({"task": task.name, "oracle_passed": oracle.passed, "oracle_steps": oracle.tool_calls,
                     "oracle_probed": all(p.probed for p in policies) and bool(policies),
                     "calibration": judged.summary.calibration, "why": judged.summary.calibration_reason,
                     "scores": {v.kind.value: v.score for v in judged.verdicts},
                     "summaries": {v.kind.value: v.answer.summary if v.answer else v.problem
                                   for v in judged.verdicts}})
        print(json.dumps(rows[-1]["scores"]), task.name, file=sys.stderr, flush=True)

    def mean(kind: str) -> dict:
        xs = [r["scores"][kind] for r in rows if r["scores"].get(kind) is not None]
        return {"mean": round(statistics.mean(xs), 2) if xs else None, "n": len(xs), "scores": xs}

    verdicts = sorted({r["calibration"] for r in rows})
    return {"code": str(Path(skill2env_dagster.__file__).resolve().parent), "tasks": rows,
            "oracle_unprobed": [r["task"] for r in rows if not r["oracle_probed"]],
            "oracle": mean("oracle"), "noop": mean("noop"),
            "calibration": {c: sum(r["calibration"] == c for r in rows) for c in verdicts}}


@contextlib.contextmanager
def judge_endpoint(fake: bool) -> Iterator[LLMConfig]:
    if not fake:
        yield from_env()
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.fake_openai import FakeOpenAI
    from tests.support.scripted_agent import outcome_judge_reply

    with FakeOpenAI(outcome_judge_reply) as srv:
        yield LLMConfig(base_url=srv.base_url, model="fake-judge", api_key=SecretStr(""), cache_dir="",
                        max_retries=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("artifacts", type=Path, help="the artifacts folder of a `skill2env run --rollouts`")
    ap.add_argument("--out", type=Path, required=True, help="folder for judge_references.json and trajectories")
    ap.add_argument("--fake-judge", action="store_true", help="a rule-based judge on loopback (no model)")
    args = ap.parse_args()
    same_checkout()
    store = ArtifactStore(args.artifacts)
    factory = DockerSandboxFactory(GateSettings(run_id="judge-references"), OutputLimits())
    with judge_endpoint(args.fake_judge) as cfg:
        judge = Judge(LLMClient(cfg), RolloutSettings().judge.model_copy(update={"max_attempts": 2}),
                      RolloutSettings().reward)
        out = judge_references(store, args.out, judge, factory)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "judge_references.json").write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")
    print(json.dumps({k: out[k] for k in ("oracle", "noop", "calibration", "oracle_unprobed")}))


if __name__ == "__main__":
    main()
