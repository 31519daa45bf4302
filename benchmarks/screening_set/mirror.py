"""Read skills of the screening set out of local bare-git mirrors of public repositories (nothing is copied into
this repository).

A mirror lives at `$S2E_MIRROR_DIR/<owner>+<name>/repo` (default `/work/.mirror`), as the `fetch` tool leaves it.
Large blobs may be absent from a mirror: such files are reported missing, and an entry whose SKILL.md is missing
cannot be evaluated (the report says so instead of guessing).
"""

from __future__ import annotations

import os
import subprocess
from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

DEFAULT_MIRROR_DIR = Path("/work/.mirror")
SKILL_FILES = ("SKILL.md", "skill.md", "Skill.md")


def mirror_root() -> Path:
    return Path(os.environ.get("S2E_MIRROR_DIR", str(DEFAULT_MIRROR_DIR)))


def mirror_path(repo: str) -> Path:
    return mirror_root() / repo.replace("/", "+") / "repo"


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    sha: str
    path: str


class Mirror:
    """One repository at one commit."""

    def __init__(self, repo: str, commit: str) -> None:
        self.repo, self.commit = repo, commit
        self.git_dir = mirror_path(repo)

    def available(self) -> bool:
        return (self.git_dir / "HEAD").exists() and self._git("cat-file", "-e", f"{self.commit}^{{commit}}") is not None

    def _git(self, *args: str) -> bytes | None:
        out = subprocess.run(["git", "--git-dir", str(self.git_dir), *args], capture_output=True)
        return out.stdout if out.returncode == 0 else None

    @cached_property
    def tree(self) -> tuple[TreeEntry, ...]:
        """Every file of the commit, sorted by path."""
        raw = self._git("ls-tree", "-r", "-z", "--full-tree", self.commit) or b""
        out = []
        for item in raw.split(b"\0"):
            if not item:
                continue
            meta, path = item.split(b"\t", 1)
            mode, _, sha = meta.decode().split()
            out.append(TreeEntry(mode, sha, path.decode("utf-8", "surrogateescape")))
        return tuple(sorted(out, key=lambda e: e.path))

    @cached_property
    def _paths(self) -> list[str]:
        return [e.path for e in self.tree]

    def skill_folders(self) -> list[str]:
        """Folders holding a SKILL.md (any of the accepted spellings), sorted."""
        found = {str(PurePosixPath(e.path).parent) for e in self.tree if PurePosixPath(e.path).name in SKILL_FILES}
        return sorted(found)

    def blob(self, sha: str) -> bytes | None:
        return self._git("cat-file", "blob", sha)

    def blobs(self, shas: list[str]) -> dict[str, bytes]:
        """Many blobs in one `git cat-file --batch` call (missing ones are left out)."""
        proc = subprocess.run(["git", "--git-dir", str(self.git_dir), "cat-file", "--batch"],
                              input=("\n".join(shas) + "\n").encode(), capture_output=True)
        out, data, pos = {}, proc.stdout, 0
        while pos < len(data):
            end = data.index(b"\n", pos)
            head = data[pos:end].split()
            pos = end + 1
            if len(head) < 3 or head[1] == b"missing":
                continue
            size = int(head[2])
            out[head[0].decode()] = data[pos:pos + size]
            pos += size + 1
        return out

    def files_under(self, folder: str) -> list[TreeEntry]:
        if folder in ("", "."):
            return list(self.tree)
        prefix = folder.rstrip("/") + "/"
        i = bisect_left(self._paths, prefix)
        out = []
        while i < len(self.tree) and self._paths[i].startswith(prefix):
            out.append(self.tree[i])
            i += 1
        return out

    def grep_files(self, needle: str) -> list[str]:
        """Paths of the commit's text files containing `needle` (case-insensitive, fixed string)."""
        out = self._git("grep", "-l", "-I", "-i", "-F", "-e", needle, self.commit) or b""
        prefix = f"{self.commit}:"
        return [ln[len(prefix):] for ln in out.decode("utf-8", "surrogateescape").splitlines() if ln.startswith(prefix)]

    def entry(self, path: str) -> TreeEntry | None:
        i = bisect_left(self._paths, path)
        return self.tree[i] if i < len(self.tree) and self._paths[i] == path else None

    def read_text(self, path: str) -> str | None:
        entry = self.entry(path)
        data = self.blob(entry.sha) if entry else None
        return data.decode("utf-8", "replace") if data is not None else None

    def extract(self, folder: str, dest: Path) -> list[str]:
        """Write the folder's files under dest (symlinks as symlinks); returns the paths whose blob is missing."""
        missing: list[str] = []
        prefix = "" if folder in ("", ".") else folder.rstrip("/") + "/"
        for e in self.files_under(folder):
            rel = e.path[len(prefix):]
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = self.blob(e.sha) if e.mode != "160000" else None
            if data is None:
                missing.append(rel)
                continue
            if e.mode == "120000":
                target.symlink_to(os.fsdecode(data))
            else:
                target.write_bytes(data)
        return missing


def skill_file_in(mirror: Mirror, folder: str) -> str | None:
    names = {PurePosixPath(e.path).name: e.path for e in mirror.files_under(folder)
             if str(PurePosixPath(e.path).parent) == folder}
    return next((names[n] for n in SKILL_FILES if n in names), None)
