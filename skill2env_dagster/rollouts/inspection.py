"""What a careful agent does around its work, for the Oracle reference: look at the working directory and read the
inputs the task names before acting, and look at what it produced after. Real commands with real outputs, read-only.

Two independent capable judges rated the bare reference (solve.sh's commands alone) +1 to +3: "a single blind script
with the procedure hard-coded, none of which the episode shows it read ... no inspection or check". The reference's
knowledge comes from the task's own files; these steps show it reading them. The judge is never told which episode
is the reference.

The paths come from the instruction (absolute paths under the working directory, and relative ones with a folder or
an extension) and from the blueprint's deliverables in task.toml; a deliverable is looked at after, the other paths
are read before (a path that does not exist yet is skipped by the command itself).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Collection, Sequence

MAX_READS = 6
READ_BYTES = 2500
CHECK_BYTES = 1500
_PATH = re.compile(r"(?<![\w./-])((?:/[\w.@+-]+)+/?|[\w.@+-]+(?:/[\w.@+-]+)+/?|[\w@+-]+\.[A-Za-z0-9]{1,5})(?![\w/])")


def named_paths(instruction: str, workdir: str) -> list[str]:
    """Container paths the instruction names, in order, resolved against the working directory."""
    out: list[str] = []
    for m in _PATH.finditer(instruction):
        raw = m.group(1).rstrip("/.")
        if not raw or "://" in raw:
            continue
        path = posixpath.normpath(raw if raw.startswith("/") else posixpath.join(workdir, raw))
        if posixpath.basename(path).split(".")[0].isupper():
            continue  # a placeholder such as FILE.csv, not a file of the task
        if path.startswith(workdir.rstrip("/") + "/") and path not in out:
            out.append(path)
    return out


def _read(path: str) -> str:
    p = shlex.quote(path)
    return (f"if [ -d {p} ]; then ls -la {p}; for f in {p}/*; do [ -f \"$f\" ] || continue; echo \"== $f\"; "
            f"head -c {READ_BYTES // 4} \"$f\"; echo; done | head -c {READ_BYTES}; "
            f"elif [ -f {p} ]; then head -c {READ_BYTES} {p}; else echo 'no such path yet: {path}'; fi")


def existing_probe(paths: Sequence[str]) -> str:
    """A read-only command printing which of `paths` exist (run before the episode, not part of it)."""
    return "for p in " + " ".join(shlex.quote(p) for p in paths) + '; do [ -e "$p" ] && echo "$p"; done; true'


def inspection_steps(instruction: str, workdir: str, deliverables: Sequence[str],
                     existing: Collection[str] | None = None) -> tuple[list[str], list[str]]:
    """(steps before the work: look around, read each input; steps after: look at each deliverable). Inputs are
    the named paths that exist before the work (`existing`; unknown: all that are not deliverables); outputs the
    deliverables, else the named paths that do not exist yet."""
    wd = workdir or "/"
    produced = [posixpath.normpath(d) for d in deliverables]
    named = named_paths(instruction, wd)
    inputs = [p for p in named if p not in produced and not any(p.startswith(d + "/") for d in produced)
              and (existing is None or p in existing)]
    outputs = produced or [p for p in named if p not in inputs and (existing is None or p not in existing)]
    before = [f"cd {shlex.quote(wd)} && find . -maxdepth 3 -not -path './proc*' | sort | head -100"]
    before += [_read(p) for p in inputs[:MAX_READS]]
    quoted = " ".join(shlex.quote(p) for p in outputs)
    after = [f"for f in {quoted}; do ls -la \"$f\"; [ -f \"$f\" ] && head -c {CHECK_BYTES} \"$f\"; echo; done"] \
        if outputs else []
    return before, after
