"""`skill2env gate TASK_DIR...`: strict gates on any Harbor task folder; exit 0 only if every task is retained.

By default every stage runs: static checks, Oracle, no-op, wrong.sh, mutation testing of the verifier, the
solution/cheats/*.sh and the tamper kit. `--no-mutants` skips mutation testing for a quick look (each report
then says `mutation_testing: off`); `--pin` first records the base-image digests of third-party tasks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from skill2env_dagster.atomic import atomic_write_text
from skill2env_dagster.gates.dockerfile import pin_dockerfile
from skill2env_dagster.gates.runner import run_gates
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.models.gate import GateVerdict
from skill2env_dagster.reasons import Skill2EnvError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gate", help="static checks, Oracle, no-op, mutants, cheats and tamper kit on Harbor tasks")
    p.add_argument("tasks", nargs="+", type=Path, help="task folders (each holds task.toml)")
    p.add_argument("--json", type=Path, help="write the JSON list of reports here (default: print it)")
    p.add_argument("--concurrency", type=int, default=2, help="tasks gated at once (default 2)")
    p.add_argument("--approved-registry", action="append", help="approved base registry (repeatable)")
    p.add_argument("--timeout-cap", type=float, help="upper bound on the tasks' own timeouts, seconds")
    p.add_argument("--no-mutants", action="store_true", help="skip mutation testing of the verifier (quick look)")
    p.add_argument("--threshold", type=float, help="shortcut threshold for trivial mutants and cheats (default 0.5)")
    p.add_argument("--pin", action="store_true",
                   help="first pin each Dockerfile's bases by digest and record them in task.toml base_image_pins")
    p.set_defaults(func=run)


def _settings(args: argparse.Namespace) -> GateSettings:
    fields: dict[str, object] = {"concurrency": args.concurrency, "timeout_cap_sec": args.timeout_cap,
                                 "mutation_testing": not args.no_mutants}
    if args.approved_registry:
        fields["approved_registries"] = tuple(args.approved_registry)
    if args.threshold is not None:
        fields["shortcut_threshold"] = args.threshold
    return GateSettings.model_validate(fields)


def _pin(tasks: list[Path], settings: GateSettings) -> None:
    """Pin what can be pinned; a task that cannot be pinned is left to the gate to reject with its reason."""
    for task in tasks:
        try:
            pins = pin_dockerfile(task, settings.approved_registries)
            print(f"pinned {task}: {pins}", file=sys.stderr)
        except (Skill2EnvError, OSError, ValueError) as e:
            print(f"could not pin {task}: {e}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if args.pin:
        _pin(list(args.tasks), settings)
    reports = run_gates(list(args.tasks), settings)
    text = json.dumps([r.summary() for r in reports], indent=2) + "\n"
    if args.json:
        atomic_write_text(args.json, text)
    else:
        sys.stdout.write(text)
    for r in reports:
        print(f"{r.verdict.value:12} {r.reason.value if r.reason else '-':28} {r.task}", file=sys.stderr)
    return 0 if all(r.verdict is GateVerdict.RETAINED for r in reports) else 1
