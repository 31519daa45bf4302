"""`skill2env crawl`: discover, parse, screen and deduplicate skills; write OUT/skills.parquet."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from skill2env_dagster.reasons import Skill2EnvError
from skill2env_dagster.skillhub.config import CrawlSettings, SourcesConfig, dir_sources, load_sources_config
from skill2env_dagster.skillhub.crawl import crawl
from skill2env_dagster.skillhub.snapshot import write_flat


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("crawl", help="crawl skill folders into OUT/skills.parquet (one row per SKILL.md)")
    p.add_argument("sources", nargs="*", type=Path, help="folder trees to crawl (each becomes a `dir` source)")
    p.add_argument("--config", type=Path, help="sources YAML (dir and git sources); combined with SOURCES")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--dedup-threshold", type=float, help="word 5-gram Jaccard for near-duplicates (default 0.8)")
    p.add_argument("--no-records", action="store_true", help="skip the per-skill JSON records")
    p.set_defaults(func=run)


def _config(args: argparse.Namespace) -> SourcesConfig:
    base = load_sources_config(args.config) if args.config else None
    sources = list(base.sources) if base else []
    taken = {s.name for s in sources}
    for spec in dir_sources(args.sources):
        while spec.name in taken:
            spec = spec.model_copy(update={"name": f"{spec.name[:60]}-x"})
        taken.add(spec.name)
        sources.append(spec)
    settings = base.settings if base else CrawlSettings()
    if args.dedup_threshold is not None:
        settings = settings.model_copy(update={"dedup_threshold": args.dedup_threshold})
    return SourcesConfig(sources=sources, settings=settings)


def run(args: argparse.Namespace) -> int:
    if not args.sources and not args.config:
        print("skill2env crawl: give at least one SOURCE_DIR or --config", file=sys.stderr)
        return 2
    try:
        result = crawl(_config(args))
    except Skill2EnvError as e:
        print(f"skill2env crawl: {e}", file=sys.stderr)
        return 2
    manifest = write_flat(result, args.out, with_records=not args.no_records)
    print(json.dumps(manifest.model_dump(mode="json"), indent=2))
    failed = [s for s in result.sources if s.error]
    for s in failed:
        print(f"skill2env crawl: source {s.name} unavailable: {s.error}", file=sys.stderr)
    return 1 if failed and len(failed) == len(result.sources) else 0
