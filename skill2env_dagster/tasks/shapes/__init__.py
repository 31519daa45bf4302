"""The shape library: world + verifier families, each realising one archetype/verifier combination from one
family of the skill's predicates. Order matters only as the last tie-break when several shapes fit."""

from __future__ import annotations

from skill2env_dagster.tasks.shapes.base import Shape
from skill2env_dagster.tasks.shapes.entry_audit import EntryAudit
from skill2env_dagster.tasks.shapes.entry_programs import CheckerRepair, EntryChecker, TokenScanner
from skill2env_dagster.tasks.shapes.entry_transforms import EntryFix, EntryNormaliser, MetamorphicNormaliser
from skill2env_dagster.tasks.shapes.run_audit import ChecklistAudit, RunAudit, RunResume
from skill2env_dagster.tasks.shapes.service_sync import ServiceSync
from skill2env_dagster.tasks.shapes.table_cases import TableCases, TableEvidence
from skill2env_dagster.tasks.shapes.template_doc import TemplateAuthor, TemplateRepair

SHAPES: list[Shape] = [
    EntryAudit(), EntryChecker(), CheckerRepair(), TokenScanner(), EntryFix(), EntryNormaliser(),
    MetamorphicNormaliser(), RunAudit(), RunResume(), ChecklistAudit(), TableCases(), TableEvidence(),
    TemplateAuthor(), TemplateRepair(), ServiceSync(),
]

__all__ = ["SHAPES", "Shape"]
