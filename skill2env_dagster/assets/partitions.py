"""The one partitioning scheme: a dynamic partition per crawled skill (key = SkillRecord.skill_id)."""

import dagster as dg

SKILLS_PARTITION = "skills"
skills_partitions = dg.DynamicPartitionsDefinition(name=SKILLS_PARTITION)
