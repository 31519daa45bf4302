"""Retrieval probe: does a task still identify its own skill? (TF-IDF, BM25 and an entity-masked control)."""

from skill2env_dagster.probe.index import SkillIndex
from skill2env_dagster.probe.run import candidate_skills, probe_retrieval
from skill2env_dagster.probe.tasks import ProbeTask, find_task_dirs, load_tasks, read_tasks

__all__ = [
    "ProbeTask",
    "SkillIndex",
    "candidate_skills",
    "find_task_dirs",
    "load_tasks",
    "probe_retrieval",
    "read_tasks",
]
