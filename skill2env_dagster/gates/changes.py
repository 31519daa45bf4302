"""What a container changed on its filesystem, from the engine's view (the agent cannot forge it).

Two sources give the same answer. `docker diff` works everywhere but costs 0.3–0.5 s here (Docker 20.10 diffs a
container's layer naively, walking the whole image). When the gate runs on the engine's own host with the overlay2
driver, walking the container's upper directory (its writable layer, `GraphDriver.Data.UpperDir`) gives the same
entries in milliseconds. Either way the source is outside the container, so nothing the agent ran can hide a
change; agent-made symlinks in the upper directory are never followed.

Neither source sees the tmpfs mounts (/tmp, /logs, /dev/shm): a change there is invisible to both, which is why
the runner empties them instead of inspecting them.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass
from enum import IntEnum
from pathlib import PurePosixPath

import docker.errors
from docker.models.containers import Container

log = logging.getLogger(__name__)

# Entries Docker itself makes in every container layer: the init binary's and our tmpfs mounts' mount points.
RUNTIME_ENTRIES = frozenset({"/usr/sbin/docker-init", "/sbin/docker-init", "/logs", "/tmp", "/dev", "/proc", "/sys"})


class ChangeKind(IntEnum):
    """Docker's own numbering (ChangeModify=0, ChangeAdd=1, ChangeDelete=2)."""

    MODIFIED = 0
    ADDED = 1
    DELETED = 2


@dataclass(frozen=True, order=True)
class Change:
    path: str
    kind: ChangeKind
    is_dir: bool | None = None  # None when the source cannot tell (docker diff)

    @property
    def letter(self) -> str:
        return "CAD"[self.kind]

    def __str__(self) -> str:
        return f"{self.letter} {self.path}"


def is_under(path: str, prefix: str) -> bool:
    """`path` is `prefix` or lies below it (plain string logic on absolute POSIX paths)."""
    prefix = prefix.rstrip("/") or "/"
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def leaves(changes: list[Change]) -> list[Change]:
    """Drop modified directories that are listed only because something below them changed.

    Such a parent entry is no evidence by itself; the child entry is. A modified directory with nothing below
    it (its own metadata changed, or a child was made and removed again) is dropped too when the source knows it
    is a directory; `docker diff` cannot tell, so there such an entry stays (the cautious reading).
    """
    parents = {str(a) for c in changes for a in PurePosixPath(c.path).parents}
    return [c for c in changes
            if not (c.kind is ChangeKind.MODIFIED and (c.path in parents or c.is_dir is True))]


def without_runtime(changes: list[Change]) -> list[Change]:
    return [c for c in changes if c.path not in RUNTIME_ENTRIES]


def _from_docker_diff(container: Container) -> list[Change]:
    return [Change(str(d["Path"]), ChangeKind(int(d["Kind"]))) for d in container.diff() or []]


def _upper_dirs(container: Container) -> tuple[str, list[str]] | None:
    """(upper dir, lower dirs) when the overlay2 layer is readable from here, else None."""
    driver = container.attrs.get("GraphDriver") or {}
    data = driver.get("Data") or {}
    upper, lower = data.get("UpperDir"), data.get("LowerDir")
    if driver.get("Name") != "overlay2" or not upper or not lower or not os.path.isdir(upper):
        return None
    return upper, [d for d in str(lower).split(":") if d]


def _whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _opaque(path: str) -> bool:
    """An overlay directory made anew over one of the image's (`rm -rf d; mkdir d`): it hides what lies below."""
    for name in ("trusted.overlay.opaque", "user.overlay.opaque"):
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _image_entries(lowers: list[str], rel: str) -> set[str]:
    """The names in folder `rel` as the image has it: the lower layers from the top, whiteouts and opaque
    folders honoured."""
    names: set[str] = set()
    masked: set[str] = set()
    for low in lowers:
        folder = os.path.join(low, rel)
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                break
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name not in names and entry.name not in masked:
                (masked if _whiteout(entry.stat(follow_symlinks=False)) else names).add(entry.name)
        if _opaque(folder):
            break
    return names


def _walk_upper(upper: str, lowers: list[str]) -> list[Change]:
    """Iterative walk (an agent can nest deeper than Python's recursion limit); never follows symlinks. An opaque
    folder (made anew over one of the image's) reports what it hides as deleted, as `docker diff` does: emptying
    a toolchain folder by making it again is a deletion like any other."""
    out: list[Change] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(upper, rel) if rel else upper))
        except OSError as e:
            log.warning("cannot read %s/%s: %s", upper, rel, e)
            continue
        for entry in entries:
            sub = f"{rel}/{entry.name}" if rel else entry.name
            st = entry.stat(follow_symlinks=False)
            is_dir = stat.S_ISDIR(st.st_mode)
            if _whiteout(st):  # overlay whiteout: deleted in this layer
                out.append(Change("/" + sub, ChangeKind.DELETED))
                continue
            existed = any(os.path.lexists(os.path.join(low, sub)) for low in lowers)
            # An opaque directory (replaced wholesale) that existed below is "modified"; its children are "added".
            kind = ChangeKind.MODIFIED if existed else ChangeKind.ADDED
            out.append(Change("/" + sub, kind, is_dir))
            if is_dir:
                stack.append(sub)
                if existed and _opaque(entry.path):
                    kept = {e.name for e in os.scandir(entry.path)}
                    out += [Change(f"/{sub}/{name}", ChangeKind.DELETED)
                            for name in sorted(_image_entries(lowers, sub) - kept)]
    return out


def fast_view(container: Container) -> bool:
    """Whether this host can read the container's upper directory (see the module docstring)."""
    try:
        container.reload()
    except docker.errors.APIError:
        return False
    return _upper_dirs(container) is not None


def engine_changes(container: Container, use_upper_dir: bool = True) -> list[Change]:
    """Every path the container added, modified or deleted relative to its image (see `leaves`), Docker's own
    mount points excluded.

    Raises docker.errors.APIError / NotFound when the engine cannot answer (the container is gone).
    """
    dirs = None
    if use_upper_dir:
        try:
            container.reload()
            dirs = _upper_dirs(container)
        except docker.errors.NotFound:
            raise
        except (docker.errors.APIError, OSError) as e:
            log.debug("upper dir unavailable, using docker diff: %s", e)
    raw = _walk_upper(*dirs) if dirs else _from_docker_diff(container)
    return sorted(without_runtime(leaves(raw)))


def top_level(paths: list[str]) -> list[str]:
    """The paths not below another path of the list (what to delete or copy as a whole)."""
    out: list[str] = []
    for p in sorted(set(paths)):
        if not any(is_under(p, q) for q in out):
            out.append(p)
    return out


def parent_of(path: str) -> str:
    return str(PurePosixPath(path).parent)
