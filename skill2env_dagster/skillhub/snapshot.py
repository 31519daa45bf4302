"""Write and read crawl snapshots: a parquet table of all skills plus one validated JSON record per skill.

A snapshot folder is named by its content address (CrawlResult.snapshot_id) and published with one rename, and
`latest.json` is replaced atomically after it, so readers never see a half-written snapshot.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from skill2env_dagster.atomic import atomic_replace_dir, atomic_write_text
from skill2env_dagster.models.skill import SkillRecord
from skill2env_dagster.models.snapshot import SnapshotManifest
from skill2env_dagster.reasons import ReasonCode, StoreError
from skill2env_dagster.skillhub.crawl import CrawlResult, Previous
from skill2env_dagster.store import read_model, write_model

SKILLS_TABLE = "skills.parquet"

_SCHEMA = pa.schema([
    ("skill_id", pa.string()), ("source", pa.string()), ("source_kind", pa.string()),
    ("source_commit", pa.string()), ("abs_path", pa.string()), ("rel_path", pa.string()), ("skill_file", pa.string()),
    ("name", pa.string()), ("description", pa.string()), ("license", pa.string()), ("domain", pa.string()),
    ("status", pa.string()), ("reasons", pa.list_(pa.string())), ("duplicate_of", pa.string()),
    ("bundle_digest", pa.string()), ("warnings", pa.list_(pa.string())), ("n_files", pa.int32()),
    ("bytes", pa.int64()), ("frontmatter_status", pa.string()), ("fixture_of", pa.string()),
    ("evidence", pa.string()),
])


def skills_table(records: list[SkillRecord]) -> pa.Table:
    rows: dict[str, list[object]] = {name: [] for name in _SCHEMA.names}
    for r in records:
        values = {
            "skill_id": r.skill_id, "source": r.source, "source_kind": r.source_kind,
            "source_commit": r.source_commit, "abs_path": r.abs_path, "rel_path": r.rel_path,
            "skill_file": r.skill_file,
            "name": r.name, "description": r.description, "license": r.license, "domain": r.domain,
            "status": r.status.value, "reasons": [c.value for c in r.reasons], "duplicate_of": r.duplicate_of,
            "bundle_digest": r.bundle_digest, "warnings": r.warnings, "n_files": len(r.files),
            "bytes": sum(f.size for f in r.files), "frontmatter_status": r.frontmatter_status,
            "fixture_of": r.fixture_of,
            "evidence": json.dumps([f.model_dump(mode="json") for f in r.findings], ensure_ascii=False),
        }
        for k, v in values.items():
            rows[k].append(v)
    return pa.table(rows, schema=_SCHEMA)


def manifest_of(result: CrawlResult) -> SnapshotManifest:
    reasons: dict[str, int] = {}
    for r in result.records:
        for c in r.reasons:
            reasons[c.value] = reasons.get(c.value, 0) + 1
    return SnapshotManifest(
        snapshot_id=result.snapshot_id(), created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        n_skills=len(result.records), status_counts=result.status_counts(), reason_counts=dict(sorted(reasons.items())),
        sources=[vars(s) for s in result.sources], seconds={k: round(v, 3) for k, v in result.seconds.items()},
    )


def write_table(records: list[SkillRecord], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False) as tmp:
        pq.write_table(skills_table(records), tmp.name)
    Path(tmp.name).replace(path)


def write_flat(result: CrawlResult, out_dir: Path, *, with_records: bool = True) -> SnapshotManifest:
    """The CLI layout: OUT/skills.parquet, OUT/snapshot.json and OUT/records/<skill_id>.json."""
    manifest = manifest_of(result)
    write_table(result.records, out_dir / SKILLS_TABLE)
    if with_records:
        for r in result.records:
            write_model(out_dir / "records" / f"{r.skill_id}.json", r)
    write_model(out_dir / "snapshot.json", manifest)
    return manifest


def publish_snapshot(result: CrawlResult, root: Path) -> tuple[Path, SnapshotManifest]:
    """Content-addressed publish under root/<snapshot_id>/ and an atomic `latest.json` pointer."""
    manifest = manifest_of(result)
    final = root / manifest.snapshot_id
    if not (final / "snapshot.json").exists():
        staging = Path(tempfile.mkdtemp(prefix=f".{manifest.snapshot_id}.", dir=_mkdir(root)))
        try:
            write_flat(result, staging)
            atomic_replace_dir(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    atomic_write_text(root / "latest.json", json.dumps({"snapshot_id": manifest.snapshot_id}) + "\n")
    return final, manifest


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def latest_snapshot_dir(root: Path) -> Path:
    try:
        sid = json.loads((root / "latest.json").read_text())["snapshot_id"]
    except (FileNotFoundError, KeyError, json.JSONDecodeError) as e:
        raise StoreError(ReasonCode.INTERNAL_ERROR, f"no crawl snapshot under {root}: run skillhub_crawl first") from e
    return root / sid


def load_record(snapshot_dir: Path, skill_id: str) -> SkillRecord:
    return read_model(snapshot_dir / "records" / f"{skill_id}.json", SkillRecord)


def load_manifest(snapshot_dir: Path) -> SnapshotManifest:
    return read_model(snapshot_dir / "snapshot.json", SnapshotManifest)


def fingerprint(bundle_digest: str, status: str, reasons: list[str], duplicate_of: str | None,
                name: str | None, description: str | None) -> str:
    """What downstream cares about: content, verdict and duplicate status (not where the checkout lives)."""
    key = "|".join([bundle_digest, status, ",".join(sorted(reasons)), duplicate_of or "", name or "",
                    description or ""])
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def record_fingerprint(r: SkillRecord) -> str:
    return fingerprint(r.bundle_digest, r.status.value, [c.value for c in r.reasons], r.duplicate_of, r.name,
                       r.description)


def previous_crawl(root: Path) -> Previous | None:
    """The latest published snapshot under `root` as the next crawl's Previous (None: nothing to reuse)."""
    try:
        snap = latest_snapshot_dir(root)
        manifest = load_manifest(snap)
    except StoreError:
        return None
    sources = {str(s["name"]): (str(s["commit"]), str(s["reuse_key"])) for s in manifest.sources
               if s.get("commit") and s.get("reuse_key") and not s.get("error")}
    if not sources:
        return None
    return Previous(sources, lambda: [read_model(p, SkillRecord) for p in sorted((snap / "records").glob("*.json"))])
