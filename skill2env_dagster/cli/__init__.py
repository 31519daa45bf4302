"""The `skill2env` command: one sub-module per noun, each a thin wrapper over domain code."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from skill2env_dagster.cli.runner.interrupts import ignore_further_sigint

# Each module exposes register(subparsers) and sets `func` on its parser; add a name here to add a command.
COMMAND_MODULES: tuple[str, ...] = (
    "crawl",
    "gate",
    "base_images",
    "ops",
    "run",
    "demo",
    "probe",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="skill2env", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"skill2env_dagster.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:  # a command without its own handling: the conventional status, not a traceback
        ignore_further_sigint()
        print(f"skill2env {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
