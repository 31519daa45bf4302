"""A self-contained DuckDB file: every exported table copied in, plus views for the questions people ask first."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa

from skill2env_dagster.reasons import INFO_CODES

_INFO = ", ".join(f"'{c.value}'" for c in sorted(INFO_CODES, key=lambda c: c.value))
VIEWS: dict[str, str] = {
    "skill_funnel": "SELECT status, count(*) AS skills FROM skills GROUP BY status ORDER BY skills DESC",
    # screened-out skills per reason (a skill may carry several); non-blocking findings apart, in skill_recorded
    "skill_reasons": "SELECT reason, count(DISTINCT skill_id) AS skills FROM (SELECT skill_id, unnest(reasons) AS "
                     f"reason FROM skills WHERE status = 'screened_out') WHERE reason NOT IN ({_INFO}) "
                     "GROUP BY reason ORDER BY skills DESC",
    "skill_recorded": "SELECT reason, count(DISTINCT skill_id) AS skills FROM (SELECT skill_id, unnest(reasons) AS "
                      f"reason FROM skills) WHERE reason IN ({_INFO}) GROUP BY reason ORDER BY skills DESC",
    "retained_tasks": "SELECT * FROM tasks WHERE status = 'retained' AND NOT coalesce(contaminated, false)",
    "domain_mix": "SELECT s.domain, count(DISTINCT s.skill_id) FILTER (WHERE s.eligible) AS eligible_skills, "
                  "count(r.task_name) AS retained_tasks FROM skills s LEFT JOIN retained_tasks r USING (skill_id) "
                  "GROUP BY s.domain ORDER BY retained_tasks DESC, s.domain",
    "axis_coverage": "SELECT axis, value, count(*) AS tasks FROM (UNPIVOT (SELECT archetype, "
                     "primary_verifier_pattern, complexity, persona, tone, expertise FROM retained_tasks) "
                     "ON COLUMNS(*) INTO NAME axis VALUE value) GROUP BY axis, value ORDER BY axis, tasks DESC",
    "gate_pass_rates": "SELECT check_name, count(*) AS runs, avg(CASE WHEN check_verdict = 'pass' THEN 1 ELSE 0 END) "
                       "AS pass_rate, count(*) FILTER (WHERE check_verdict = 'error') AS errored FROM gates "
                       "WHERE check_name IS NOT NULL GROUP BY check_name ORDER BY pass_rate",
    "task_reasons": "SELECT reason, count(*) AS tasks FROM (SELECT unnest(reasons) AS reason FROM tasks "
                    "WHERE status <> 'retained') GROUP BY reason ORDER BY tasks DESC",
    # an unknown (NULL) cost anywhere makes the total unknown: sum() alone would skip it and under-report
    "cost_per_retained_task": "SELECT CASE WHEN count(*) FILTER (WHERE cost_usd IS NULL) > 0 THEN NULL "
                              "ELSE sum(cost_usd) END AS cost_usd, sum(prompt_tokens + completion_tokens) AS tokens, "
                              "(SELECT count(*) FROM retained_tasks) AS retained_tasks, CASE WHEN count(*) FILTER "
                              "(WHERE cost_usd IS NULL) > 0 THEN NULL ELSE sum(cost_usd) END / "
                              "nullif((SELECT count(*) FROM retained_tasks), 0) AS cost_usd_per_task FROM usage",
    "probe_by_domain": "SELECT domain, count(*) AS tasks, avg(CASE WHEN rank_instruction_rubric = 1 THEN 1 ELSE 0 END) "
                       "AS top1, avg(CASE WHEN rank_instruction_rubric <= 10 THEN 1 ELSE 0 END) AS top10, "
                       "avg(1.0 / rank_instruction_rubric) AS mrr FROM probe WHERE status = 'scored' "
                       "GROUP BY domain ORDER BY top1",
}


def write_duckdb(tables: dict[str, pa.Table], path: Path) -> list[str]:
    """Build the database in a temporary file and rename it into place; returns the view names."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        for name, table in tables.items():
            con.register("_incoming", table)
            con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM _incoming')
            con.unregister("_incoming")
        for name, sql in VIEWS.items():
            con.execute(f'CREATE VIEW "{name}" AS {sql}')
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        raise
    con.close()
    os.replace(tmp, path)
    return list(VIEWS)
