"""The model-backed task creator on real skills, with a capable model: retention, rejections, cost per retained task.

Usage:
  .venv/bin/python benchmarks/bench_creator.py --relay-root /work/relay/creator-run1 [--skills ID ...]
        [--variants 2] [--concurrency 6] [--out DIR]
  .venv/bin/python benchmarks/bench_creator.py --base-url URL --model NAME ...      # any OpenAI-compatible server
  .venv/bin/python benchmarks/bench_creator.py --report DIR                        # print figures of a finished run

Skills are folders of ../shared/corpus/skills (default: six of different kinds). Per skill: crawl, the offline
planner and axis sampler, then --variants candidates through `create_tasks_for_skill` with the creator agent and
the real gates. With --relay-root one relay
(../shared/tools/llmrelay) per skill is started on ROOT/<n>-<skill>/, so several answering agents can work at once;
the relays stop when the run ends. Prints (and writes to OUT/results.json):
- created / retained per variant, and per candidate (a rejected frozen candidate is replaced by a new one);
- rejections by reason;
- per retained task: model turns (round trips), tool calls, tokens, wall time; the same totals per created task;
- the relay's seconds per answer.
Retained task folders are copied to OUT/retained/ for the blind review. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skill2env_dagster.creator import CreatorAgent, CreatorLimits, creator_prompts_version
from skill2env_dagster.creator.lab import DockerLab
from skill2env_dagster.gates.base_images import load_base_images
from skill2env_dagster.gates.runner import gate_task
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.llm import LLMConfig
from skill2env_dagster.llm.client import LLMClient
from skill2env_dagster.llm.tools import ToolChat
from skill2env_dagster.models.plan import WorkflowPlanSet
from skill2env_dagster.models.task import TaskBundleSet
from skill2env_dagster.planning import plan_offline, plan_with_llm, sample_axes
from skill2env_dagster.skillhub.crawl import crawl_paths
from skill2env_dagster.store import ArtifactStore
from skill2env_dagster.tasks.pipeline import CreationSettings, create_tasks_for_skill

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("S2E_SHARED_DIR") or REPO.parent / "shared")
RELAY = Path("/work/shared/tools/llmrelay/relay.py")
SKILLS = ("anthropics__knowledge-work-plugins/data/skills/sql-queries",
          "anthropics__knowledge-work-plugins/finance/skills/reconciliation",
          "anthropics__knowledge-work-plugins/customer-support/skills/ticket-triage",
          "anthropics__knowledge-work-plugins/bio-research/skills/single-cell-rna-qc",
          "anthropics__knowledge-work-plugins/marketing/skills/seo-audit",
          "anthropics__knowledge-work-plugins/engineering/skills/incident-response")
WAIT = 43200.0  # seconds one relay request may wait for its answer (answering agents start as slots free up)


def start_relay(queue: Path) -> tuple[subprocess.Popen[bytes], str]:
    """One relay on `queue` (ours: stopped at the end by its pid); its base URL."""
    queue.mkdir(parents=True, exist_ok=True)
    for stale in ("port", "DONE"):
        (queue / stale).unlink(missing_ok=True)
    relay = RELAY if RELAY.is_file() else SHARED / "tools" / "llmrelay" / "relay.py"
    proc = subprocess.Popen([sys.executable, str(relay), "--queue", str(queue), "--wait", str(WAIT)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if (queue / "port").is_file() and (queue / "port").read_text().strip():
            return proc, f"http://127.0.0.1:{(queue / 'port').read_text().strip()}/v1"
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"relay on {queue} did not start")


def llm_config(base_url: str, model: str, limits: CreatorLimits) -> LLMConfig:
    return LLMConfig(base_url=base_url, model=model, timeout=WAIT + 60, max_retries=1, cache_dir="",
                     max_tokens=limits.max_tokens_per_turn)


def plans_for(skill: Any, args: argparse.Namespace, base_url: str, out: Path,
              limits: CreatorLimits) -> WorkflowPlanSet:
    """The workflows the creator is briefed with: the product's model planner through the same endpoint (what a
    user with a model gets; `--planner model`), or the offline planner, which since issue 25 plans only skills
    with a rule it can compile. Kept in OUT/plans/ (the transcript export reads them)."""
    path = out / "plans" / f"{skill.skill_id}.json"
    if path.is_file():
        return WorkflowPlanSet.model_validate_json(path.read_text())
    if args.planner == "model":
        plans = plan_with_llm(skill, LLMClient(llm_config(base_url, args.model, limits)), prompt_version="bench",
                              model=args.model)
    else:
        plans = plan_offline(skill, prompt_version="bench")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(plans.model_dump_json(indent=1))
    return plans


def creator(base_url: str, model: str, settings: GateSettings, limits: CreatorLimits) -> CreatorAgent:
    config = llm_config(base_url, model, limits)
    version = creator_prompts_version({**config.fingerprint(), "creator": limits.model_dump()})
    return CreatorAgent(ToolChat(config), model, version, lambda: DockerLab(settings), settings, limits)


def run_skill(folder: Path, args: argparse.Namespace, base_url: str, out: Path, settings: GateSettings,
              limits: CreatorLimits) -> dict[str, Any]:
    (skill,) = [r for r in crawl_paths([folder]).records if r.skill_file]
    done = out / "bundles" / f"{skill.skill_id}.json"
    if done.is_file():  # a re-run resumes: finished skills are kept as they are
        return {"skill": skill.skill_id, "folder": str(folder), "resumed": True}
    plans = plans_for(skill, args, base_url, out, limits)
    axes = sample_axes(plans)
    axes = axes.model_copy(update={"samples": axes.samples[: args.variants]})
    gen = creator(base_url, args.model, settings, limits)
    start = time.perf_counter()
    store = ArtifactStore(out / "store")
    result, _ = create_tasks_for_skill(store, skill, plans, axes, gen, lambda p: gate_task(p, settings),
                                       load_base_images(), CreationSettings(max_variants=args.variants))
    (out / "bundles").mkdir(parents=True, exist_ok=True)
    (out / "bundles" / f"{skill.skill_id}.json").write_text(result.model_dump_json(indent=1))
    for b in result.retained():
        shutil.copytree(b.path, out / "retained" / b.task_name, dirs_exist_ok=True)
    return {"skill": skill.skill_id, "folder": str(folder), "seconds": round(time.perf_counter() - start, 1),
            "usage": result.usage.model_dump(), "planner_usage": plans.usage.model_dump(),
            "workflows": len(plans.workflows)}


def _stats(values: list[float]) -> str:
    if not values:
        return "-"
    return f"mean {statistics.mean(values):.1f}, median {statistics.median(values):.1f}, total {sum(values):.0f}"


def report(out: Path) -> dict[str, Any]:
    """Figures of a run folder (its bundles/*.json and relay logs)."""
    sets = [TaskBundleSet.model_validate_json(p.read_text()) for p in sorted((out / "bundles").glob("*.json"))]
    bundles = [b for s in sets for b in s.bundles]
    retained = [b for b in bundles if b.status == "retained"]
    runs = [r for b in bundles for r in b.creator]
    reasons = Counter(r.value for b in bundles if b.status != "retained" for r in b.reasons)
    cand_reasons = Counter(r.value for r in runs if r.status != "retained" for r in r.reasons)
    per_variant = {b.task_name: b.creator for b in bundles}
    turns = [sum(r.turns for r in rs) for rs in per_variant.values()]
    tokens = [sum(r.usage.prompt_tokens + r.usage.completion_tokens for r in rs) for rs in per_variant.values()]
    secs = [sum(r.seconds for r in rs) for rs in per_variant.values()]
    usage_calls = sum(s.usage.calls for s in sets)
    usage_tokens = sum(s.usage.prompt_tokens + s.usage.completion_tokens for s in sets)
    n_ret = max(1, len(retained))
    rows = json.loads((out / "skills.json").read_text()) if (out / "skills.json").is_file() else []
    planner_calls = sum(r.get("planner_usage", {}).get("calls", 0) for r in rows)
    figures = {
        "skills": len(sets), "created": len(bundles), "retained": len(retained),
        "retained_share": round(len(retained) / max(1, len(bundles)), 3),
        "candidates": len(runs), "candidates_retained": sum(r.status == "retained" for r in runs),
        "rejected_by_reason": dict(reasons), "candidate_rejections_by_reason": dict(cand_reasons),
        "stops": dict(Counter(r.stop for r in runs)),
        "model_calls": usage_calls, "tokens": usage_tokens,
        "round_trips_per_retained": round(usage_calls / n_ret, 2),
        "planner_calls": planner_calls,  # one per skill with --planner model, not in the creation figures above
        "tokens_per_retained": round(usage_tokens / n_ret),
        "wall_seconds_per_retained": round(sum(secs) / n_ret, 1) if runs else None,
        "per_variant_turns": _stats([float(t) for t in turns]),
        "per_variant_tokens": _stats([float(t) for t in tokens]),
        "per_variant_seconds": _stats(secs),
        "model_seconds": round(sum(r.model_seconds for r in runs), 1),
        "tool_seconds": round(sum(r.tool_seconds for r in runs), 1),
        "gate_runs": sum(r.gate_runs for r in runs), "repairs": sum(r.repairs for r in runs),
        "refusals": dict(sum((Counter(r.refusals) for r in runs), Counter())),
        "rejections_by_untold_rule": untold(runs),
        "relay": relay_figures(out),
    }
    return figures


def export_transcripts(out: Path, dest: Path, only: list[str]) -> None:
    """Every retained variant of a run (or those named), as a replayable transcript for the CI replay tests."""
    from tests.support.creator_replay import transcript_from

    rows = {r["skill"]: r for r in json.loads((out / "skills.json").read_text()) if "folder" in r}
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted((out / "bundles").glob("*.json")):
        bundles = TaskBundleSet.model_validate_json(path.read_text())
        row = rows[bundles.skill_id]
        (skill,) = [r for r in crawl_paths([Path(row["folder"])]).records if r.skill_file]
        stored = out / "plans" / f"{skill.skill_id}.json"
        plans = WorkflowPlanSet.model_validate_json(stored.read_text()) if stored.is_file() else plan_offline(
            skill, prompt_version="bench")
        samples = {(s.workflow, s.variant): s for s in sample_axes(plans).samples}
        workflows = {w.name: w for w in plans.workflows}
        for b in bundles.retained():
            if only and b.task_name not in only:
                continue
            sample = samples[(b.workflow, b.variant)]
            folder = str(Path(row["folder"]).resolve().relative_to((SHARED / "corpus" / "skills").resolve()))
            t = transcript_from(b, folder, workflows[b.workflow].model_dump(mode="json"),
                                sample.model_dump(mode="json"), load_base_images())
            (dest / f"{b.task_name}.json").write_text(json.dumps(t, indent=1, ensure_ascii=False) + "\n")
            print(f"transcript {dest / (b.task_name + '.json')}: {t['recorded']}")


def untold(runs: list[Any]) -> dict[str, int]:
    """Candidate rejections whose reason no rule of the creator's prompt states (the target is none)."""
    from skill2env_dagster.creator.rules import disclosed_codes

    told = disclosed_codes(GateSettings(), CreatorLimits())
    return dict(Counter(r.value for run in runs if run.status == "rejected" for r in run.reasons if r not in told))


def relay_figures(out: Path) -> dict[str, Any]:
    logs = sorted((out / "relay").glob("*/relay.jsonl")) if (out / "relay").is_dir() else []
    rows = [json.loads(line) for p in logs for line in p.read_text().splitlines() if line.strip()]
    answered = [r for r in rows if r.get("status") == 200]
    secs = [float(r["seconds"]) for r in answered]
    return {"requests": len(rows), "answered": len(answered), "errors": len(rows) - len(answered),
            "seconds_per_answer": _stats(secs), "tool_calls_per_answer":
            round(statistics.mean([r.get("tool_calls", 0) for r in answered]), 2) if answered else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skills", nargs="+", default=list(SKILLS), help="folders under ../shared/corpus/skills")
    ap.add_argument("--corpus", type=Path, default=SHARED / "corpus" / "skills")
    ap.add_argument("--variants", type=int, default=2)
    ap.add_argument("--planner", choices=("model", "offline"), default="model",
                    help="workflows from the model (one planning request per skill, first in its queue) or offline")
    ap.add_argument("--concurrency", type=int, default=6)
    ap.add_argument("--relay-root", type=Path, help="start one relay per skill under this folder")
    ap.add_argument("--base-url", default="", help="an OpenAI-compatible endpoint instead of relays")
    ap.add_argument("--model", default="relay-model")
    ap.add_argument("--out", type=Path, default=Path("out/bench_creator"))
    ap.add_argument("--max-turns", type=int, default=40)
    ap.add_argument("--max-wall-sec", type=float, default=6 * 3600)
    ap.add_argument("--report", type=Path, help="only print the figures of a finished run folder")
    ap.add_argument("--export-transcripts", type=Path, metavar="DIR",
                    help="with --report RUN: write RUN's retained variants as replayable transcripts to DIR")
    ap.add_argument("--tasks", nargs="*", default=[], help="with --export-transcripts: only these task names")
    args = ap.parse_args()
    if args.report and args.export_transcripts:
        export_transcripts(args.report, args.export_transcripts, args.tasks)
        return
    if args.report:
        print(json.dumps(report(args.report), indent=1))
        return
    if not args.relay_root and not args.base_url:
        ap.error("give --relay-root (one relay per skill) or --base-url")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    settings = GateSettings(run_id=f"bench-creator-{int(time.time())}")
    limits = CreatorLimits(max_turns=args.max_turns, max_wall_sec=args.max_wall_sec)
    relays: list[subprocess.Popen[bytes]] = []
    urls: dict[str, str] = {}
    queues: dict[str, Path] = {}
    try:
        for n, sid in enumerate(args.skills, 1):
            if args.relay_root:
                queue = args.relay_root / f"{n:02d}-{sid.rsplit('/', 1)[-1]}"
                proc, urls[sid] = start_relay(queue)
                queues[sid] = queue
                relays.append(proc)
                (out / "relay").mkdir(exist_ok=True)
                link = out / "relay" / queue.name
                if not link.exists():
                    link.symlink_to(queue)
                print(f"relay {queue} -> {urls[sid]}", flush=True)
            else:
                urls[sid] = args.base_url
        lock = threading.Lock()
        done: list[dict[str, Any]] = []

        def one(sid: str) -> None:
            try:
                row = run_skill(args.corpus / sid, args, urls[sid], out, settings, limits)
            except Exception as e:  # one skill's crash is reported; the others go on
                row = {"skill": sid, "error": f"{type(e).__name__}: {e}"}
            if sid in queues:  # tells the answering agent this queue will get no more requests
                (queues[sid] / "DONE").write_text(json.dumps(row) + "\n")
            with lock:
                done.append(row)
                (out / "skills.json").write_text(json.dumps(done, indent=1))
            print(f"done {sid}: {row}", flush=True)

        with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
            list(pool.map(one, args.skills))
    finally:
        for proc in relays:
            proc.terminate()
    figures = report(out)
    (out / "results.json").write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                                  "figures": figures}, indent=1))
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
