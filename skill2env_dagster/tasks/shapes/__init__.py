"""The shape library: world + verifier families, each realising one archetype/verifier combination from one
family of the skill's compiled rules (tasks/predicates/compile.py). Order matters only as the last tie-break when
several shapes fit."""

from __future__ import annotations

from skill2env_dagster.tasks.shapes.base import Shape
from skill2env_dagster.tasks.shapes.command_guard_audit import CommandGuardAudit
from skill2env_dagster.tasks.shapes.deadline_audit import DeadlineAudit
from skill2env_dagster.tasks.shapes.ledger_flags import LedgerFlags
from skill2env_dagster.tasks.shapes.service_sync import ServiceSync
from skill2env_dagster.tasks.shapes.skill_folder_audit import SkillFolderAudit
from skill2env_dagster.tasks.shapes.sql_type_audit import SqlTypeAudit

SHAPES: list[Shape] = [DeadlineAudit(), SkillFolderAudit(), CommandGuardAudit(), SqlTypeAudit(), LedgerFlags(),
                       ServiceSync()]

__all__ = ["SHAPES", "Shape"]
