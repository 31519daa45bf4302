"""`skill2env run`: process a hub of skills headlessly, through the real code location and a persistent Dagster
instance under `--out`, with a quiet progress view; prints the funnel and exports the retained tasks.

Re-runnable: only partitions with stale or missing assets (Dagster's staleness) run again, so a second run over
an unchanged hub does nothing, and after an edit only the edited skills' partitions re-run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from skill2env_dagster.cli.runner.console import new_log_file, quiet_console
from skill2env_dagster.cli.runner.home import RunHome, RunnerError
from skill2env_dagster.cli.runner.options import RunOptions
from skill2env_dagster.cli.runner.progress import ProgressView
from skill2env_dagster.export.funnel import Funnel, RolloutSummary
from skill2env_dagster.reasons import Skill2EnvError
from skill2env_dagster.tasks.pipeline import CreationSettings


def add_run_options(p: argparse.ArgumentParser, out_default: Path, max_variants_default: int) -> None:
    """Options `run` and `demo` share."""
    p.add_argument("--out", type=Path, default=out_default, help=f"run folder (default {out_default})")
    p.add_argument("--workers", type=int, default=1, help="skill partitions run at once (default 1)")
    p.add_argument("--only", nargs="+", default=None, metavar="ID", help="only these skill ids (after the crawl)")
    p.add_argument("--max-variants", type=int, default=max_variants_default,
                   help=f"task candidates per skill (default {max_variants_default})")
    p.add_argument("--skip-docker-up", action="store_true", help="do not run scripts/docker-up.sh first")
    p.add_argument("--json", action="store_true", help="print the funnel as JSON (for scripts)")
    p.add_argument("--snapshots-only", action="store_true",
                   help="crawl and record every skill's snapshot (verdict, duplicates) in batch runs; plan and "
                        "create no tasks (a hub's screening pass, or its nightly refresh)")
    p.add_argument("--rollouts", action="store_true",
                   help="also run solver rollouts, the rubric judge and hardening on every skill with retained "
                        "tasks (the skill_rollouts job: k model episodes per task; needs S2E_LLM_*)")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="the full log on the terminal instead of the progress bar")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="process a hub of skills headlessly through Dagster (re-runnable)")
    p.add_argument("sources", nargs="*", metavar="SOURCE_DIR|GIT_URL@REF", help="folders and git repositories")
    p.add_argument("--sources", dest="sources_files", action="append", type=Path, default=[], metavar="FILE",
                   help="a sources YAML (repeatable; see docs/screening.md › Sources)")
    add_run_options(p, Path("out/run"), CreationSettings().max_variants)
    p.set_defaults(func=run)


def options_from(args: argparse.Namespace) -> RunOptions:
    return RunOptions(out=args.out, items=list(getattr(args, "sources", []) or []),
                      sources_files=list(getattr(args, "sources_files", []) or []), workers=max(1, args.workers),
                      only=args.only, settings=CreationSettings(max_variants=args.max_variants),
                      skip_docker_up=args.skip_docker_up, rollouts=args.rollouts,
                      snapshots_only=getattr(args, "snapshots_only", False))


def execute(options: RunOptions, args: argparse.Namespace) -> tuple[int, Funnel | None]:
    """Run with the quiet console; print the funnel; exit 0 unless a partition or the analytics failed."""
    from skill2env_dagster.cli.runner.interrupts import ignore_further_sigint, restore_sigint
    from skill2env_dagster.cli.runner.session import Session  # Dagster loads only when a run starts

    restore_sigint()  # Ctrl-C stops the run even when it was started with SIGINT ignored (a background job)
    verbose = bool(getattr(args, "verbose", False))
    log_file = new_log_file(RunHome(options.out.resolve()).logs)
    try:
        with quiet_console(log_file, verbose) as terminal:
            view = ProgressView(terminal, enabled=not verbose)
            funnel = Session(options, view, log_file, verbose).execute()
    except (RunnerError, Skill2EnvError) as e:
        print(f"skill2env run: {e}\n(log: {log_file})", file=sys.stderr)
        return 2, None
    except KeyboardInterrupt:
        ignore_further_sigint()  # stopped: a late SIGINT must not turn exit 130 into "killed by SIGINT"
        print(f"skill2env run: interrupted; the next run resumes where this one stopped (log: {log_file})",
              file=sys.stderr)
        return 130, None
    print(funnel.model_dump_json(indent=2) if args.json else render(funnel))
    if not args.json:
        print(f"\nbrowse the runs: {RunHome(options.out.resolve()).browse_command()}", file=sys.stderr)
    failed = funnel.failed_partitions or funnel.work.analytics == "failed"
    return (1 if failed else 0), funnel


def _rollouts_line(r: RolloutSummary) -> str:
    if r.status == "skipped":
        return f"rollouts: skipped ({r.reason})"
    labels = ", ".join(f"{k} {v}" for k, v in r.labels.items()) or "none"
    scale = ", ".join(f"{k} {v}" for k, v in r.judge_scale.items()) or "not judged"
    return (f"rollouts: {r.rollouts} episodes on {r.tasks} tasks ({r.ran} skills ran, {r.up_to_date} up to date, "
            f"{r.failed} failed) · difficulty {labels} · judged {r.judged} (hardened rebuilds {r.hardened_judged}), "
            f"judge failed {r.judge_failed} · judge scale {scale} · hacking {r.hacking} (reward 0) · "
            f"SFT rows {r.sft_rows}")


MAX_LISTED = 12  # skills without tasks listed on the console (all of them are in the JSON funnel)


def render(f: Funnel) -> str:
    """The funnel for people: one line per stage, then what this run did, failures, and where things are."""
    def reasons(d: dict[str, int]) -> str:
        return f" ({', '.join(f'{k} {v}' for k, v in d.items())})" if d else ""

    w = f.work
    lines = [f"skills crawled {f.skills_crawled} · eligible {f.eligible} · screened out {_screened(f)} · duplicates "
             f"{f.duplicates} · invalid {f.invalid}"]
    if f.recorded_by_reason:
        lines.append(f"recorded, not screened out: {', '.join(f'{k} {v}' for k, v in f.recorded_by_reason.items())}")
    if f.second_opinion:
        op = f.second_opinion
        asked = op.get("asked", 0)
        lines.append(f"second opinion on {asked} skill{'s' if asked != 1 else ''} ({op.get('cached', 0)} from its "
                     f"cache, {op.get('failed', 0)} failed: the rules' verdict stood) · cleared "
                     f"{op.get('cleared', 0)} · screened out {op.get('screened_out', 0)}")
    lines.append(f"planned {f.planned} · created {f.created} · retained {f.retained} · rejected "
                 f"{sum(f.rejected_by_reason.values())}{reasons(f.rejected_by_reason)}")
    if f.without_tasks:
        lines.append(f"no task for {len(f.without_tasks)} planned skill{'s' if len(f.without_tasks) != 1 else ''} "
                     f"(no_checkable_rule {f.no_checkable_rule}; the reasons are in the JSON funnel, "
                     "`without_tasks`):")
        lines += [f"  {k}: {v[:160]}" for k, v in list(f.without_tasks.items())[:MAX_LISTED]]
        if len(f.without_tasks) > MAX_LISTED:
            lines.append(f"  … and {len(f.without_tasks) - MAX_LISTED} more")
    if w.ran == 0 and w.failed == 0 and w.analytics != "ran":
        lines.append(f"nothing to do: {w.up_to_date} of {w.partitions} partitions up to date (0 runs), "
                     f"analytics {w.analytics.replace('_', ' ')}")
    else:
        lines.append(f"work: {w.ran} partitions ran ({w.runs} runs, {w.assets_materialized} assets), {w.up_to_date} "
                     f"up to date, {w.failed} failed; analytics {w.analytics.replace('_', ' ')}; {w.seconds:.0f} s "
                     f"with {w.workers} worker{'s' if w.workers > 1 else ''}")
    lines.append(_generator_line(f))
    for stage, by_reason in f.failed_by_stage.items():
        lines.append(f"failed at {stage}: {reasons(by_reason).strip(' ()')}")
    for name, error in f.sources_unavailable.items():
        lines.append(f"source unavailable: {name}: {error}")
    for p in f.failed_partitions:
        lines.append(f"failed: {p.partition} at {p.stage}: {p.reason} {p.message}".rstrip())
    probe = f.retrieval_probe
    if probe:
        main = probe.get("instruction_rubric")
        if isinstance(main, dict):
            lines.append(f"retrieval probe: top-1 {main['top1']:.0%}, top-10 {main['top10']:.0%} over "
                         f"{probe['n_skills']} skills (chance {float(str(probe['chance'])):.1%})")
    lines.append(_rollouts_line(f.rollouts))
    lines.append(f"tasks: {len(f.exported)} in {f.tasks_dir}")
    lines.append(f"log: {f.log_file}")
    return "\n".join(lines)


def _screened(f: Funnel) -> str:
    """`54 skills (needs_live_service 46, ...; a skill may carry several)`: skills once, their reasons apart."""
    if not f.screened_out:
        return "0 skills"
    by = ", ".join(f"{k} {v}" for k, v in f.screened_out_by_reason.items())
    several = "; a skill may carry several" if sum(f.screened_out_by_reason.values()) > f.screened_out else ""
    return f"{f.screened_out} skill{'s' if f.screened_out != 1 else ''} ({by}{several})"


def _generator_line(f: Funnel) -> str:
    """Which generator ran and, when a model was called, its calls (failed ones too), tokens and cost."""
    u = f.llm_usage
    if not (u.get("calls") or u.get("failed_calls")):
        return f"generator: {f.generator}"
    cost = u.get("cost_usd")
    return (f"generator: {f.generator} · model calls {u.get('calls')} (failed {u.get('failed_calls')}), tokens "
            f"{u.get('prompt_tokens')} in / {u.get('completion_tokens')} out, cost "
            f"{f'${cost:.4f}' if isinstance(cost, float) else cost}")


def run(args: argparse.Namespace) -> int:
    code, _ = execute(options_from(args), args)
    return code


if __name__ == "__main__":
    sys.exit(run(argparse.ArgumentParser().parse_args()))
