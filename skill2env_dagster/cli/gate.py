"""`skill2env gate TASK_DIR...`: strict gates on any Harbor task folder; exit 0 only if every task is retained."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from skill2env_dagster.gates.runner import run_gates
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import GateVerdict
from skill2env_dagster.store import atomic_write_text


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="run static checks, Oracle and no-op gates on Harbor task folders")
    p.add_argument("tasks", nargs="+", type=Path, help="task folders (each holds task.toml)")
    p.add_argument("--json", type=Path, help="write the JSON list of reports here (default: print it)")
    p.add_argument("--concurrency", type=int, default=2, help="tasks gated at once (default 2)")
    p.add_argument("--approved-registry", action="append", help="approved base registry (repeatable)")
    p.add_argument("--timeout-cap", type=float, help="upper bound on the tasks' own timeouts, seconds")
    p.set_defaults(func=run)


def _settings(args: argparse.Namespace) -> GateSettings:
    fields: dict[str, object] = {"concurrency": args.concurrency, "timeout_cap_sec": args.timeout_cap}
    if args.approved_registry:
        fields["approved_registries"] = tuple(args.approved_registry)
    return GateSettings(**fields)


def run(args: argparse.Namespace) -> int:
    reports = run_gates(list(args.tasks), _settings(args))
    text = json.dumps([r.summary() for r in reports], indent=2) + "\n"
    if args.json:
        atomic_write_text(args.json, text)
    else:
        sys.stdout.write(text)
    for r in reports:
        print(f"{r.verdict.value:12} {r.reason.value if r.reason else '-':28} {r.task}", file=sys.stderr)
    return 0 if all(r.verdict is GateVerdict.RETAINED for r in reports) else 1
