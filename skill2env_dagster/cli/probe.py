"""`skill2env probe`: does each task still retrieve its own skill among the eligible skills of a crawl?"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.export.decontam import decontaminate
from skill2env_dagster.models.export import DecontamConfig
from skill2env_dagster.models.probe import ALL_MODES, ProbeConfig, ProbeReport
from skill2env_dagster.probe import candidate_skills, load_tasks, probe_retrieval
from skill2env_dagster.reasons import Skill2EnvError
from skill2env_dagster.skillhub.crawl import crawl_paths


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe", help="retrieval probe: rank every eligible skill for every task (TF-IDF, BM25, masked)")
    p.add_argument("--tasks", type=Path, required=True, help="folder of Harbor task folders (task.toml per task)")
    p.add_argument("--skills", type=Path, nargs="+", required=True, help="skill source folders to crawl")
    p.add_argument("--json", type=Path, required=True, help="where to write the report (JSON)")
    p.add_argument("--modes", nargs="+", choices=ALL_MODES, help="modes to score (default: all)")
    p.add_argument("--mask-top-k", type=int, default=ProbeConfig().mask_top_k, help="terms masked per skill")
    p.add_argument("--benchmark", type=Path, nargs="*", default=[],
                   help="benchmark folders/files to decontaminate against")
    p.add_argument("--decontam-json", type=Path, help="where to write the decontamination report (needs --benchmark)")
    p.set_defaults(func=run)


def _summary(report: ProbeReport) -> str:
    lines = [
        f"skills {report.n_skills}  tasks {report.n_tasks}  scored {report.n_scored}  unmatched {report.n_unmatched}"
        f"  invalid {report.n_invalid}  chance top1 {report.chance:.4%}  top10 {report.chance_top10:.4%}",
        f"{'mode':28s} {'top1':>7s} {'top10':>7s} {'mrr':>7s}",
    ]
    lines += [f"{m:28s} {r.top1:7.1%} {r.top10:7.1%} {r.mrr:7.3f}" for m, r in report.modes.items()]
    if report.masking_drop:
        lines.append("masking drop (top1): " + "  ".join(f"{k} {v:+.1%}" for k, v in report.masking_drop.items()))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if not args.tasks.is_dir():
        print(f"skill2env probe: tasks folder {args.tasks} does not exist", file=sys.stderr)
        return 2
    if args.decontam_json and not args.benchmark:
        print("skill2env probe: --decontam-json needs at least one --benchmark path", file=sys.stderr)
        return 2
    config = ProbeConfig(mask_top_k=args.mask_top_k, **({"modes": args.modes} if args.modes else {}))
    try:
        crawl = crawl_paths(list(args.skills))
        tasks, invalid = load_tasks(args.tasks)
        report = probe_retrieval(candidate_skills(crawl.records), tasks, config, invalid=invalid)
        atomic_write_text(args.json, report.model_dump_json(indent=2) + "\n")
        if args.benchmark:
            decon = decontaminate(args.tasks, DecontamConfig(benchmark_paths=[str(p) for p in args.benchmark]))
            if args.decontam_json:
                atomic_write_text(args.decontam_json, decon.model_dump_json(indent=2) + "\n")
            print(f"decontamination: {len(decon.flagged)} of {decon.n_tasks} tasks flagged", file=sys.stderr)
    except Skill2EnvError as e:
        print(f"skill2env probe: {e}", file=sys.stderr)
        return 2
    print(_summary(report))
    if report.n_scored == 0:
        print("skill2env probe: no task could be scored (see per_task for reasons)", file=sys.stderr)
        return 1
    return 0
