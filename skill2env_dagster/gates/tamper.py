"""Tamper detection: which filesystem changes of the solve phase could change what the verifier computes.

The verifier trusts its toolchain: interpreters, libraries, the dynamic loader and its configuration, Python's
start-up hooks, the /tests folder it is copied into. A change there by the solve phase (Oracle, cheat or agent)
makes the trial's reward 0 with `tamper_detected` and the paths as evidence. The rules, on engine-side changes:

- anything below /usr, /bin, /sbin, /lib*, /etc/alternatives, /etc/ld.so.preload, /etc/ld.so.cache,
  /etc/ld.so.conf*, /tests, /logs/verifier, every directory on the image's PATH, and the prefix that owns a PATH
  directory named bin or sbin (/opt/venv for /opt/venv/bin);
- anywhere: a `site-packages` or `dist-packages` path, `sitecustomize.py`, `usercustomize.py`, any `*.pth` file
  and compiled copies of these (a planted `.pyc` can shadow a module, so bytecode is not ignored; the solve
  phase runs with PYTHONDONTWRITEBYTECODE=1, so an honest run writes none);
- deletions count as much as additions (deleting a tool can switch a verifier to a weaker fallback).

A modified directory listed only because something below it changed is no evidence by itself. The task's
working directory is exempt from the prefix rules (some images keep the world in /usr/src/app), never from the
"anywhere" rules. A task whose own world legitimately installs tools declares narrow path globs in task.toml,
`[metadata] toolchain_writes = ["/usr/local/bin/mytool", "/usr/local/lib/mytool/**"]`; those paths are then not
evidence, except the never-waived ones (/tests, /logs/verifier, /etc/ld.so.preload, sitecustomize/usercustomize).
The tamper kit (robustness.py) plants into every protected place, so a blanket declaration is caught there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath

from skill2env_dagster.gates.changes import Change, is_under, leaves
from skill2env_dagster.models.task_dir import CONTAINER_TESTS, CONTAINER_VERIFIER_LOGS

FIXED_PREFIXES = ("/usr", "/bin", "/sbin", "/etc/alternatives", "/etc/ld.so.preload", "/etc/ld.so.cache",
                  CONTAINER_TESTS, CONTAINER_VERIFIER_LOGS)
_LIB_TOP = re.compile(r"^/lib[^/]*(/|$)")
_LD_CONF = re.compile(r"^/etc/ld\.so\.conf")
_PACKAGE_DIRS = ("site-packages", "dist-packages")
_HOOKS = ("sitecustomize", "usercustomize")
NEVER_WAIVED = (CONTAINER_TESTS, CONTAINER_VERIFIER_LOGS, "/etc/ld.so.preload")


def glob_regex(pattern: str) -> re.Pattern[str]:
    """`**` matches across directories, `*` and `?` within one path segment."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def _is_hook(name: str) -> bool:
    stem = name.split(".", 1)[0]
    return stem in _HOOKS and (name.endswith(".py") or name.endswith(".pyc"))


def anywhere_rule(path: str) -> str | None:
    """The rule a path breaks wherever it lies, or None."""
    p = PurePosixPath(path)
    if _is_hook(p.name):
        return "python start-up hook"
    if p.suffix == ".pth":
        return "python .pth file"
    if any(part in _PACKAGE_DIRS for part in p.parts):
        return "python package directory"
    return None


@dataclass(frozen=True)
class TamperPolicy:
    """Protected places for one image and task; `evidence()` is a pure function of the engine's changes."""

    path_dirs: tuple[str, ...] = ()
    workdir: str | None = None
    waivers: tuple[str, ...] = ()
    ignored: tuple[str, ...] = field(default=("/solution",))  # our own upload for the Oracle, cheats, wrong.sh

    @cached_property
    def prefixes(self) -> tuple[str, ...]:
        extra: list[str] = []
        for d in self.path_dirs:
            if not d.startswith("/"):
                continue
            d = d.rstrip("/") or "/"
            extra.append(d)
            parent = str(PurePosixPath(d).parent)
            if PurePosixPath(d).name in ("bin", "sbin") and parent != "/" and not self._holds_workdir(parent):
                extra.append(parent)
        return tuple(dict.fromkeys([*FIXED_PREFIXES, *extra]))

    def _holds_workdir(self, prefix: str) -> bool:
        return bool(self.workdir) and is_under(self.workdir or "", prefix)

    @cached_property
    def _waiver_res(self) -> tuple[re.Pattern[str], ...]:
        return tuple(glob_regex(w) for w in self.waivers)

    def rule(self, path: str) -> str | None:
        """Why a changed `path` is tamper evidence, or None."""
        if any(is_under(path, i) for i in self.ignored):
            return None
        never = next((n for n in NEVER_WAIVED if is_under(path, n)), None)
        if never or _is_hook(PurePosixPath(path).name):
            return f"under {never}" if never else "python start-up hook"
        if any(r.match(path) for r in self._waiver_res):
            return None
        if (hit := anywhere_rule(path)) is not None:
            return hit
        in_workdir = bool(self.workdir) and is_under(path, self.workdir or "/")
        if in_workdir and self.workdir != "/":
            return None
        if _LIB_TOP.match(path) or _LD_CONF.match(path):
            return "system library or loader configuration"
        prefix = next((p for p in self.prefixes if is_under(path, p)), None)
        return f"under {prefix}" if prefix else None

    def evidence(self, changes: list[Change]) -> list[str]:
        """`C|A|D path (rule)` for every change that breaks a rule."""
        out = []
        for c in leaves(changes):
            why = self.rule(c.path)
            if why:
                out.append(f"{c} ({why})")
        return out
