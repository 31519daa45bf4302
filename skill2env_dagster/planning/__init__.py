"""Planning: skill facts, offline and LLM workflow planners, seeded axis sampling. Never imports dagster."""

from __future__ import annotations

from skill2env_dagster.planning.axes import coverage_table, derive_seed, sample_axes
from skill2env_dagster.planning.facts import SkillFacts, extract_facts
from skill2env_dagster.planning.llm_planner import PlanReply, plan_messages, plan_with_llm
from skill2env_dagster.planning.offline import plan_offline

__all__ = [
    "PlanReply",
    "SkillFacts",
    "coverage_table",
    "derive_seed",
    "extract_facts",
    "plan_messages",
    "plan_offline",
    "plan_with_llm",
    "sample_axes",
]
