"""The creator agent as the task pipeline sees it: one workflow variant in, one published task (or rejection) out.

For each candidate (at most `CreatorLimits.max_candidates` per variant): a fresh draft in the staging area, a
`Session` in which the model builds it, runs it and checks it, and the final gate. A candidate the gate rejects
after its freeze is published to the rejected area as `<task>--c<k>` and replaced by a new one, whose brief carries
its blueprint, test.sh and the gate's evidence: a weak verifier is replaced, never shipped and never repaired in
place. Every candidate keeps its record (`CreatorRun`: stop reason, turns, tokens, wall time, gate runs) and its
ATIF trajectory under `creator_trajectories/<skill>/`.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from skill2env_dagster.artifacts import CREATOR_PROMPTS, CREATOR_TRAJECTORIES
from skill2env_dagster.catalogue import DifficultyPattern, load_patterns
from skill2env_dagster.creator.draft import Draft
from skill2env_dagster.creator.lab import Lab, Workbench
from skill2env_dagster.creator.session import Chat, GateFn, Session, SessionResult
from skill2env_dagster.creator.settings import CreatorLimits
from skill2env_dagster.creator.skill_view import SkillView
from skill2env_dagster.creator.tools import describe_report
from skill2env_dagster.gates.reap import strip_guard
from skill2env_dagster.gates.reuse import record_creation_gate
from skill2env_dagster.gates.settings import GateSettings
from skill2env_dagster.hashing import canonical_json, sha256_bytes
from skill2env_dagster.llm.prompts import prompt_version
from skill2env_dagster.models.blueprint import TaskBlueprint
from skill2env_dagster.models.gate import CheckVerdict, GateReport, GateVerdict
from skill2env_dagster.models.plan import Usage, total_usage
from skill2env_dagster.models.task import CreationGate, CreatorRun, TaskBundle
from skill2env_dagster.models.task_dir import TaskDir
from skill2env_dagster.models.task_toml import TaskToml
from skill2env_dagster.reasons import ReasonCode
from skill2env_dagster.rollouts.sandbox import Verification
from skill2env_dagster.store import ArtifactStore, check_key
from skill2env_dagster.tasks.generator import CreationContext, EnvironmentDraft
from skill2env_dagster.tasks.pipeline import CreationSettings, bundle_record, task_config
from skill2env_dagster.tasks.publish import publish, staging_dir

log = logging.getLogger(__name__)
RECIPE = "agent"
PREVIOUS_FILE_CHARS = 6000  # per file of a rejected candidate shown to its replacement
PREVIOUS_TOTAL = 24_000  # all its files together
PROGRAMS = (".sh", ".py", ".sql", ".awk", ".js")


def previous_files(task: TaskDir, report: GateReport | None) -> list[Path]:
    """A rejected candidate's files its replacement is shown: instruction.md, tests/ (test.sh, then the other
    programs, then data) and the cheats the gate caught passing."""
    tests = sorted((f for f in task.tests_dir.rglob("*") if f.is_file()) if task.tests_dir.is_dir() else [],
                   key=lambda f: (f.name != "test.sh", f.suffix not in PROGRAMS, f.as_posix()))
    caught = {a.name.rsplit("/", 1)[-1] for a in (report.cheats if report else [])
              if a.verdict is CheckVerdict.FAIL}
    cheats = [f for f in task.cheat_scripts() if f.name in caught]
    return [f for f in [task.root / "instruction.md", *tests, *cheats] if f.is_file()]


def creator_prompts_version(fingerprint: dict[str, object] | None = None, folder: Path | str | None = None) -> str:
    """One hash over the creator's templates and the model and creator settings: editing a prompt stales
    `task_bundles`."""
    parts = {name: prompt_version(name, fingerprint, folder=folder) for name in CREATOR_PROMPTS}
    return sha256_bytes(canonical_json(parts).encode())[:16]


def candidate_patterns(ctx: CreationContext) -> list[DifficultyPattern]:
    """The sampled pattern first, then those a hardening round requires, then the rest of its dimension."""
    pool = load_patterns()
    sampled = pool.by_id(ctx.sample.difficulty_pattern)
    required = [p for pid in ctx.sample.added_patterns if (p := pool.by_id(pid)) is not None and p is not sampled]
    same = sorted((p for p in pool.by_dimension(ctx.sample.capability_dimension)
                   if p is not sampled and p not in required), key=lambda p: p.id)
    return ([sampled] if sampled else []) + required + same


class _LazyLab:
    """Opens the agent's lab when the model first runs or checks something (a model that never gets that far, or
    a test without an engine, needs none)."""

    def __init__(self, agent: CreatorAgent) -> None:
        self.agent = agent

    def workbench(self, task_dir: Path, skill_dir: Path | None) -> Workbench:
        return self.agent._open_lab().workbench(task_dir, skill_dir)

    def noop(self, task_dir: Path) -> Verification:
        return self.agent._open_lab().noop(task_dir)


class CreatorAgent:
    """A TaskAuthor (tasks.generator): the pipeline hands it each variant through `author`."""

    kind: Literal["offline", "llm"] = "llm"
    model: str | None

    def __init__(self, chat: Chat, model: str, prompt_version: str, lab: Lab | Callable[[], Lab],
                 gate_settings: GateSettings, limits: CreatorLimits | None = None,
                 prompts_folder: Path | str | None = None) -> None:
        self.chat, self.model, self.prompt_version = chat, model, prompt_version
        self._lab, self.gate_settings = lab, gate_settings
        self.limits, self.folder = limits or CreatorLimits(), prompts_folder
        self.usages: list[Usage] = []
        self.runs: list[CreatorRun] = []
        self._blueprints: dict[str, TaskBlueprint | None] = {}
        self._candidate: dict[str, int] = {}
        self._creation: dict[str, CreationGate] = {}  # task -> its retained candidate's creation-time gate

    def lab(self) -> Lab:
        return self._lab if isinstance(self._lab, Lab) else _LazyLab(self)

    def _open_lab(self) -> Lab:
        """The lab itself, made on first use: no engine is needed until a draft is run or checked."""
        if not isinstance(self._lab, Lab):
            self._lab = self._lab()
        return self._lab

    # --- what task_config asks of a generator ------------------------------------------------------------------
    def blueprint(self, ctx: CreationContext) -> TaskBlueprint | None:
        return self._blueprints.get(ctx.task_name)

    def metadata(self, ctx: CreationContext) -> dict[str, Any]:
        return {"creator": RECIPE, "creator_candidate": self._candidate.get(ctx.task_name, 1)}

    def total_usage(self) -> Usage:
        return total_usage(self.usages)

    def _config(self, ctx: CreationContext) -> Callable[[TaskBlueprint | None, str], TaskToml]:
        def make(bp: TaskBlueprint | None, flavour: str) -> TaskToml:
            self._blueprints[ctx.task_name] = bp
            image: Literal["minimal", "python"] = "python" if flavour == "python" else "minimal"
            env = EnvironmentDraft({}, image, RECIPE, ctx.sample.archetype, ctx.sample.primary_verifier_pattern)
            return task_config(ctx, env, self)
        return make

    # --- one variant -------------------------------------------------------------------------------------------
    def author(self, store: ArtifactStore, ctx: CreationContext, gate: GateFn, settings: CreationSettings,
               gate_version: str = "") -> tuple[TaskBundle, GateReport | None]:
        view, patterns = SkillView(ctx.skill), candidate_patterns(ctx)
        runs: list[CreatorRun] = []
        previous = ""
        for k in range(1, self.limits.max_candidates + 1):
            self._candidate[ctx.task_name] = k
            last_allowed = k == self.limits.max_candidates
            result, draft, path, size = self._candidate_run(store, ctx, gate, settings, view, patterns, k,
                                                            previous, last_allowed, gate_version)
            runs.append(result.run.model_copy(update={"path": str(path)}))
            self.runs.append(runs[-1])
            self.usages.append(result.run.usage)
            if last_allowed or not self._replace(result):
                return self._bundle(ctx, result, draft, path, size, runs, gate_version), result.report
            previous = self._previous(result, path)
        raise AssertionError("unreachable: the last candidate always returns")

    @staticmethod
    def _replace(result: SessionResult) -> bool:
        """A frozen candidate the gate rejected is replaced; anything else (retained, never frozen, an endpoint
        or machine failure) is final."""
        return result.frozen and result.report is not None and result.report.verdict is GateVerdict.REJECTED

    def _candidate_run(self, store: ArtifactStore, ctx: CreationContext, gate: GateFn, settings: CreationSettings,
                       view: SkillView, patterns: list[DifficultyPattern], k: int, previous: str, last: bool,
                       gate_version: str) -> tuple[SessionResult, Draft, Path, int]:
        staging = staging_dir(store, ctx.skill.skill_id, ctx.task_name)
        make = self._config(ctx)
        trajectory = store.dir(CREATOR_TRAJECTORIES, ctx.skill.skill_id) / f"{check_key(ctx.task_name)}-c{k}.json"
        try:
            draft = Draft(staging, make(None, "minimal"))
            session = Session(self.chat, self.model or "", self.limits, ctx, draft, view, self.lab(), gate,
                              self.gate_settings, patterns, make, trajectory, max_repairs=settings.max_repairs,
                              previous=previous, candidate=k, prompts_folder=self.folder)
            result = session.run()
            retained = result.run.status == "retained"
            name = ctx.task_name if last or retained or not self._replace(result) else f"{ctx.task_name}--c{k}"
            size = draft.size_bytes()
            report = result.report
            if retained and report is not None:
                result.run.evidence = []
                self._creation[ctx.task_name] = record_creation_gate(report, staging, gate_version)
            path = publish(store, staging, ctx.skill.skill_id, name, retained, [r.value for r in result.reasons],
                           result.evidence, report)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return result, draft, path, size

    def _previous(self, result: SessionResult, path: Path) -> str:
        """What the next candidate is shown of a rejected one: its blueprint, instruction, every file of tests/
        (the weakness may sit in a grader test.sh only calls), the cheats the gate caught, the gate's evidence."""
        task = TaskDir(path)
        parts = []
        if result.blueprint is not None:
            bp = result.blueprint
            parts.append("blueprint: " + bp.objective + "\nrules: " + "; ".join(
                f"{p.id} {p.source.label}: {p.statement[:160]}" for p in bp.predicates)
                + f"\nmetrics: {[c.metric for c in bp.acceptance]}")
        budget = PREVIOUS_TOTAL
        for f in previous_files(task, result.report):
            rel = f.relative_to(task.root).as_posix()
            data = f.read_bytes()
            if b"\0" in data[:4096]:
                parts.append(f"--- {rel} (binary, {len(data):,} bytes)")
                continue
            text = strip_guard(data.decode("utf-8", errors="replace"))  # the harness's guard is not theirs
            shown = text[:min(PREVIOUS_FILE_CHARS, budget)]
            budget -= len(shown)
            cut = f"\n[... {len(text) - len(shown):,} more characters not shown]" if len(shown) < len(text) else ""
            parts.append(f"--- {rel}\n{shown}{cut}")
        if result.report is not None:
            parts.append("--- the gate's evidence\n" + describe_report(result.report)[:5000])
        return "\n".join(parts)

    def _bundle(self, ctx: CreationContext, result: SessionResult, draft: Draft, path: Path, size: int,
                runs: list[CreatorRun], gate_version: str) -> TaskBundle:
        env = EnvironmentDraft({}, "python" if result.flavour == "python" else "minimal", RECIPE,
                               ctx.sample.archetype, ctx.sample.primary_verifier_pattern)
        creation = self._creation.pop(ctx.task_name, None)
        reasons = result.reasons if result.run.status != "retained" else []
        bundle = bundle_record(ctx, env, result.metrics, draft, result.run.status, reasons, result.evidence, path,
                               result.run.repairs, size, result.report, creation)
        bundle.blueprint = result.blueprint
        bundle.creator = runs
        if result.run.status != "retained" and not reasons:
            bundle.reasons = [ReasonCode.INTERNAL_ERROR]
        return bundle
