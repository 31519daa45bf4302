"""Cleared skills reach workflow_plans in the same run (issue 28), with the capable model's own second opinions.

A real `skill2env run` (the Session, in this process, the Dagster instance under --out) over a hub of the skills of
one part of the measurement sample (opinion_sample.py; by default those of its stratum `eligible_screened_out`,
the skills a clearance is for), with the second opinion answered from the opinion cache that part's relay
measurement filled: the same replies the capable model gave, and no new request (a cache miss would go to
--base-url and, with no relay there, fail and be counted). Everything else runs as without a model (no S2E_LLM_*):
the screen's endpoint is given through the snapshot asset's one seam (`opinion_endpoint`). Then the same run
again, which must ask the model nothing. Prints aggregates only (the set's discipline: no test-half id):

    .venv/bin/python benchmarks/screening_set/opinion_run.py --part 1/3 --base-url http://127.0.0.1:PORT/v1 \\
        --cache /work/relay/opinion-1/cache --out /tmp/opinion-run-1
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import opinion_sample
from evaluate import load_items, missing_mirrors, screen_items
from mirror import Mirror

from skill2env_dagster.skillhub.config import CrawlSettings, SourcesConfig, SourceSpec
from skill2env_dagster.skillhub.screen.engine import ScreenSettings


def _hub(drawn: list[opinion_sample.Drawn], root: Path) -> None:
    mirrors: dict[tuple[str, str], Mirror] = {}
    for n, d in enumerate(drawn):
        item = d.item
        mirrors.setdefault((item.repo, item.commit), Mirror(item.repo, item.commit)).extract(item.path,
                                                                                              root / f"{n:04d}")


def _run(out: Path, hub: Path, endpoint: object) -> tuple[object, dict[str, object]]:
    """One `skill2env run` of the hub with the screen's endpoint set; (funnel, per-skill facts)."""
    import dagster as dg

    from skill2env_dagster.artifacts import PLANS, SNAPSHOT
    from skill2env_dagster.assets import skillhub as skillhub_assets
    from skill2env_dagster.cli.runner.console import new_log_file
    from skill2env_dagster.cli.runner.home import RunHome
    from skill2env_dagster.cli.runner.options import RunOptions
    from skill2env_dagster.cli.runner.progress import ProgressView
    from skill2env_dagster.cli.runner.session import RUN_TAG, Session
    from skill2env_dagster.store import ArtifactStore
    from skill2env_dagster.tasks.pipeline import CreationSettings

    skillhub_assets.opinion_endpoint = lambda _llm: endpoint  # the seam: later stages stay offline
    settings = CrawlSettings(screen=ScreenSettings(second_opinion=True, second_opinion_clears=True))
    sources = SourcesConfig(sources=[SourceSpec(name="sample", kind="dir", path=str(hub))], settings=settings)
    options = RunOptions(out=out, sources=sources, settings=CreationSettings(max_variants=1), skip_docker_up=True)
    log_file = new_log_file(RunHome(out.resolve()).logs)
    session = Session(options, ProgressView(io.StringIO(), enabled=False), log_file)
    funnel = session.execute()
    store = ArtifactStore(RunHome(out.resolve()).artifacts)
    facts: dict[str, object] = {}
    with dg.DagsterInstance.get() as instance:
        for key in instance.get_dynamic_partitions("skills"):
            rec = store.load(SNAPSHOT, key) if store.exists(SNAPSHOT, key) else None
            op = rec.second_opinion if rec is not None else None
            found = instance.fetch_materializations(dg.AssetRecordsFilter(
                asset_key=dg.AssetKey(PLANS.name), asset_partitions=[key]), limit=1).records
            run = instance.get_run_by_id(found[0].run_id) if found else None
            mat = found[0].asset_materialization if found else None
            facts[key] = {
                "cleared": bool(op and op.cleared and rec is not None and rec.is_eligible),
                "failed": bool(op and op.status == "failed"),
                "calls": op.usage.calls if op else 0,
                "planned_this_run": bool(run and run.tags.get(RUN_TAG) == session.session_id and mat is not None
                                         and mat.metadata.get("status") is not None
                                         and mat.metadata["status"].value == "planned"),
                "plans_ran_this_run": bool(run and run.tags.get(RUN_TAG) == session.session_id),
                "has_plans": store.exists(PLANS, key),
            }
    return funnel, facts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=opinion_sample.DEFAULT_SEED)
    ap.add_argument("--part", default="1/1", metavar="K/N")
    ap.add_argument("--stratum", default="eligible_screened_out", help="which stratum's skills form the hub ('all')")
    ap.add_argument("--base-url", required=True, help="the part's relay URL, as its measurement used it")
    ap.add_argument("--model", default="relay-model")
    ap.add_argument("--cache", type=Path, required=True, help="the part's S2E_LLM_CACHE_DIR")
    ap.add_argument("--out", type=Path, required=True, help="run folder (deleted first)")
    args = ap.parse_args()

    for var in [v for v in os.environ if v.startswith("S2E_LLM_")]:
        del os.environ[var]  # later stages offline; the screen's endpoint comes through the seam
    items = load_items("test")
    if missing_mirrors(items):
        raise SystemExit("mirrors missing: see screen_corpus_report.py --set")
    screen_items(items, CrawlSettings())
    k, n = (int(x) for x in args.part.split("/"))
    drawn = [d for d in opinion_sample.part(opinion_sample.draw(items, args.seed), k, n)
             if args.stratum in ("all", d.stratum)]

    from skill2env_dagster.resources.llm import LLMResource

    endpoint = LLMResource(base_url=args.base_url, model=args.model, cache_dir=str(args.cache), max_retries=0,
                           timeout=30)
    shutil.rmtree(args.out, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="s2e-opinion-run-") as tmp:
        hub = Path(tmp) / "hub"
        _hub(drawn, hub)
        first_funnel, first = _run(args.out, hub, endpoint)
        second_funnel, second = _run(args.out, hub, endpoint)
    cleared = [f for f in first.values() if f["cleared"]]
    report = {
        "part": args.part, "stratum": args.stratum, "skills": len(first),
        "second_opinion": first_funnel.second_opinion,
        "cleared": len(cleared),
        "cleared_planned_in_the_same_run": sum(f["planned_this_run"] for f in cleared),
        "cleared_plans_ran_in_the_same_run": sum(f["plans_ran_this_run"] for f in cleared),
        "opinion_failed": sum(f["failed"] for f in first.values()),
        "model_calls_first_run": sum(f["calls"] for f in first.values()),
        "second_run_work": second_funnel.work.model_dump(include={"partitions", "up_to_date", "ran", "runs"}),
        "second_run_model_calls": sum(f["calls"] for f in second.values()),
        "second_run_opinion": second_funnel.second_opinion,
        "funnel_line": {"eligible": first_funnel.eligible, "screened_out": first_funnel.screened_out,
                        "planned": first_funnel.planned},
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
