"""The one registry of artifacts: every asset's name, the model its files hold, and the job/partition names.

An `Artifact[M]` pairs a name (the Dagster asset key, the store folder) with the pydantic model of its files, so
`store.load(PLANS, key)` returns a `WorkflowPlanSet` without anyone repeating the pair. Domain modules may import
this registry; it is the only place they learn asset names. It imports no Dagster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from skill2env_dagster.models.axes import AxisSampleSet
from skill2env_dagster.models.difficulty import DifficultyReport
from skill2env_dagster.models.export import CorpusStats
from skill2env_dagster.models.failure import SkillFailures
from skill2env_dagster.models.hardening import HardeningSet
from skill2env_dagster.models.judge import JudgeScores
from skill2env_dagster.models.knowledge import SkillKnowledge
from skill2env_dagster.models.plan import WorkflowPlanSet
from skill2env_dagster.models.probe import ProbeReport
from skill2env_dagster.models.rollout import SolverRollouts
from skill2env_dagster.models.sft import SftManifest
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.models.task import TaskBundleSet, TaskGateReports
from skill2env_dagster.versions import CodeScope

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Artifact(Generic[M]):
    """A stored artifact: `ROOT/<name>/<key>.json` files validated as `model`."""

    name: str
    model: type[M]
    scope: CodeScope | None  # None: a record kept beside the assets, not an asset's output
    partitioned: bool = True

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Folder:
    """An artifact made of files that are not one model (a crawl snapshot, an export tree, a staging area)."""

    name: str
    scope: CodeScope | None = None  # None: not an asset's output (staging areas, the external lineage root)

    def __str__(self) -> str:
        return self.name


# --- what decides each artifact's content (versions.py turns a scope into the asset's code_version) ------------
SKILLHUB_SCOPE = CodeScope(modules=("skillhub",), data=("screening_rules.yaml", "screening_learned.json"))
# The creator agent's system prompt and brief (the gate's rules are rendered into the system prompt from its code).
CREATOR_PROMPTS = ("creator_system.j2", "creator_brief.j2")
# The judge's template includes the constitution; both are listed so that the registry names every prompt it uses.
JUDGE_PROMPTS = ("judge_rollout.j2", "judge_constitution.j2")

# --- per-skill artifacts (partition key = skill id) ------------------------------------------------------------
# The snapshot adds the model's second opinion when an endpoint is configured (skillhub/opinion.py).
SNAPSHOT = Artifact("skillhub_snapshot", SkillRecord, CodeScope(
    modules=("skillhub",), data=("screening_rules.yaml",), prompts=("screen_second_opinion.j2",),
    model_modules=("llm",), model_settings=True))
# What the skill teaches (rules, limits, procedures, tables…): read by the planner and the task creator.
KNOWLEDGE = Artifact("skill_knowledge", SkillKnowledge, CodeScope(modules=("knowledge",)))
PLANS = Artifact("workflow_plans", WorkflowPlanSet, CodeScope(
    modules=("planning.offline", "planning.llm_planner", "knowledge"), prompts=("plan_workflows.j2",),
    model_modules=("llm",), model_settings=True))
AXES = Artifact("axis_samples", AxisSampleSet, CodeScope(
    modules=("planning.axes",), data=("axes.yaml", "difficulty_patterns.yaml")))
# The creation-time gate decides which candidates are retained, so the gate code is part of the bundles' scope;
# both generators' blueprints instantiate the difficulty patterns.
TASKS = Artifact("task_bundles", TaskBundleSet, CodeScope(
    modules=("tasks", "creator", "gates"), data=("difficulty_patterns.yaml",),
    prompts=CREATOR_PROMPTS, model_modules=("llm",), model_settings=True))
GATES = Artifact("gate_reports", TaskGateReports, CodeScope(modules=("gates",)))
# Solver rollouts: the harness, the sandbox adapter and the solver settings (those are the "model settings" here;
# the asset passes their fingerprint). Trajectories live in the skill's folder next to the artifact file.
ROLLOUTS = Artifact("solver_rollouts", SolverRollouts, CodeScope(
    modules=("rollouts.runner", "rollouts.docker_sandbox"), prompts=("solver_system.j2",), model_settings=True))
JUDGE = Artifact("judge_scores", JudgeScores, CodeScope(
    modules=("rollouts.judge",), prompts=JUDGE_PROMPTS, model_modules=("llm",), model_settings=True))
# Hardening rebuilds through the creator and the gates, then rolls out again: all of that decides its content.
HARDENING = Artifact("task_hardening", HardeningSet, CodeScope(
    modules=("rollouts.hardening", "rollouts.runner", "rollouts.docker_sandbox", "tasks", "creator", "gates"),
    data=("difficulty_patterns.yaml",), prompts=(*CREATOR_PROMPTS, "solver_system.j2"),
    model_modules=("llm",),
    model_settings=True))

# --- corpus-wide artifacts (one key) ---------------------------------------------------------------------------
PROBE = Artifact("retrieval_probe", ProbeReport, CodeScope(modules=("probe",)), partitioned=False)
STATS = Artifact("corpus_stats", CorpusStats, CodeScope(modules=("export.stats", "export.plots")), partitioned=False)
SFT = Artifact("sft_dataset", SftManifest, CodeScope(modules=("rollouts.sft",)), partitioned=False)
DIFFICULTY = Artifact("difficulty_report", DifficultyReport, CodeScope(modules=("rollouts.report",)),
                      partitioned=False)
CORPUS_KEY = "corpus"  # the key of every unpartitioned artifact
# Per skill: stages whose last run failed, with the reason and the usage spent (written by the assets on failure,
# removed on success; read by the export and the funnel).
FAILURES = Artifact("stage_failures", SkillFailures, None)

# --- folders ---------------------------------------------------------------------------------------------------
CRAWL = Folder("skillhub_crawl", SKILLHUB_SCOPE)  # content-addressed snapshots (parquet + records)
EXPORT = Folder("corpus_export", CodeScope(modules=("export",)))  # Harbor dataset, parquet tables, DuckDB
RAW_SKILL_MD = Folder("raw_skill_md")  # the external lineage root; observed by the crawl, never written
STAGING = Folder(".staging")  # task folders being built (never a finished artifact)
REJECTED = Folder("rejected")  # published folders of rejected task candidates
CREATOR_TRAJECTORIES = Folder("creator_trajectories")  # ATIF trajectories of the creator agent's candidates

ALL_SCOPED: tuple[Artifact[Any] | Folder, ...] = (
    CRAWL, SNAPSHOT, KNOWLEDGE, PLANS, AXES, TASKS, GATES, ROLLOUTS, JUDGE, HARDENING, PROBE, EXPORT, STATS, SFT,
    DIFFICULTY,
)

# --- Dagster names that live outside the asset graph -----------------------------------------------------------
SKILLS_PARTITION = "skills"
CRAWL_JOB = "skillhub_crawl_job"
PIPELINE_JOB = "skill_pipeline"
ROLLOUTS_JOB = "skill_rollouts"
SNAPSHOT_JOB = "skill_snapshot_refresh"
ANALYTICS_JOB = "corpus_analytics"
