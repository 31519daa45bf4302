"""`skill2env demo`: `skill2env run` on our own example skills (examples/skillhub, source name `examples`), with
two task variants per skill: crawl → snapshot → plans → axes → task bundles → gates → probe and export, through
Dagster with a persistent instance (so the runs show in `dagster dev`), then the funnel and the retained tasks in
OUT/tasks/<task>/ (each a complete Harbor task)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from skill2env_dagster.cli.run import add_run_options, execute, options_from
from skill2env_dagster.cli.runner.home import REPO
from skill2env_dagster.skillhub.config import CrawlSettings, SourcesConfig, SourceSpec

EXAMPLES = SourceSpec(name="examples", kind="dir", path=str(REPO / "examples" / "skillhub"), priority=10)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="skill2env run on examples/skillhub (what scripts/demo.sh runs)")
    add_run_options(p, Path("out/demo"), 2)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    options = options_from(args)
    options.sources = SourcesConfig(sources=[EXAMPLES],
                                    settings=CrawlSettings(cache_dir=str(args.out.resolve() / "git-cache")))
    code, funnel = execute(options, args)
    if code == 0 and funnel is not None and not funnel.exported:
        return 1  # the examples always yield tasks: none means something is broken
    return code


if __name__ == "__main__":
    sys.exit(run(argparse.ArgumentParser().parse_args()))
