"""Resolve configured sources to folders on disk; git sources are pinned to a commit that goes into provenance.

Git work goes through the git CLI into a cache: one bare mirror per source, and one read-only checkout per commit
(`<cache>/<source>/trees/<commit>`), so re-crawling an unchanged commit costs a `git fetch` and nothing else, and
the path of every skill stays valid for later stages after the branch moves on.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from skill2env_dagster.reasons import InfraError, ReasonCode
from skill2env_dagster.skillhub.config import SourceSpec

GIT_TIMEOUT_S = 300


@dataclass(frozen=True)
class ResolvedSource:
    spec: SourceSpec
    root: Path  # the folder to crawl (subdir applied)
    commit: str | None
    uri: str


def _git(*args: str, cwd: Path | None = None) -> str:
    env = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=True
        )
    except subprocess.CalledProcessError as e:
        raise InfraError(ReasonCode.SOURCE_UNAVAILABLE, f"git {' '.join(args)} failed: {e.stderr.strip()}") from e
    except (subprocess.TimeoutExpired, FileNotFoundError) as e:
        raise InfraError(ReasonCode.SOURCE_UNAVAILABLE, f"git {' '.join(args)}: {e}") from e
    return out.stdout.strip()


def _mirror(spec: SourceSpec, cache: Path) -> Path:
    url = spec.url or spec.path or ""
    key = hashlib.sha256(url.encode()).hexdigest()[:12]
    mirror = cache / spec.name / f"mirror-{key}.git"
    if not (mirror / "HEAD").exists():
        tmp = mirror.with_name(mirror.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "--mirror", "--quiet", url, str(tmp))
        tmp.rename(mirror)
    else:
        _git("fetch", "--quiet", "--prune", "origin", "+refs/*:refs/*", cwd=mirror)
    return mirror


def _checkout(mirror: Path, commit: str, trees: Path) -> Path:
    """Export the commit's tree (not a worktree: nothing in it may point back into the mirror)."""
    dest = trees / commit
    if dest.is_dir():
        return dest
    tmp = trees / f".{commit}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=mirror, capture_output=True, timeout=GIT_TIMEOUT_S
    )
    if archive.returncode != 0:
        raise InfraError(ReasonCode.SOURCE_UNAVAILABLE, f"git archive {commit}: {archive.stderr.decode()[:300]}")
    subprocess.run(["tar", "-x", "-f", "-", "-C", str(tmp)], input=archive.stdout, check=True)
    tmp.rename(dest)
    return dest


def resolve_source(spec: SourceSpec, cache_dir: Path) -> ResolvedSource:
    """Make the source readable on disk; raises InfraError(source_unavailable) with the reason if it cannot."""
    if spec.kind == "dir":
        root = Path(spec.path or "").resolve() / spec.subdir
        if not root.is_dir():
            raise InfraError(ReasonCode.SOURCE_UNAVAILABLE, f"source {spec.name!r}: no folder at {root}")
        return ResolvedSource(spec=spec, root=root.resolve(), commit=None, uri=str(Path(spec.path or "").resolve()))
    mirror = _mirror(spec, cache_dir)
    commit = _git("rev-parse", "--verify", f"{spec.ref}^{{commit}}", cwd=mirror)
    tree = _checkout(mirror, commit, cache_dir / spec.name / "trees")
    root = (tree / spec.subdir).resolve()
    if not root.is_dir():
        raise InfraError(ReasonCode.SOURCE_UNAVAILABLE, f"source {spec.name!r}: no {spec.subdir} at {commit}")
    return ResolvedSource(spec=spec, root=root, commit=commit, uri=spec.url or spec.path or "")
