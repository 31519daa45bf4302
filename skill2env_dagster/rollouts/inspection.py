"""What a careful agent does around its work, for the Oracle reference: look at the working directory and read the
inputs the task names before acting, and look at what it produced after. Real commands with real outputs, read-only.

Two independent capable judges rated the bare reference (solve.sh's commands alone) +1 to +3: "a single blind script
with the procedure hard-coded, none of which the episode shows it read ... no inspection or check". The reference's
knowledge comes from the task's own files; these steps show it reading them. The judge is never told which episode
is the reference.

The paths come from the instruction (absolute paths under the working directory, and relative ones with a folder or
an extension) and from the blueprint's deliverables in task.toml; a deliverable is looked at after, the other paths
are read before (a path that does not exist yet is skipped by the command itself).

Every input is shown whole where the budget allows: a read-only probe before the episode (`existing_probe`, not part
of it) says which named paths exist, the files of each named folder and their sizes; the reads are then grouped so
that no call prints more than the agent's tool keeps and the judge is shown of one call (`CALL_BYTES`), each file
in full up to `FILE_BYTES`, all inputs together up to `READ_BUDGET`. A file cut short, and any file of a folder left
unread, is marked as such in the output (an independent judge could not check several attempts of a task whose
folder listing had been cut silently at 2,500 characters).

After the work, a deliverable program the instruction shows being called on a file (`/app/bin/tool FILE.csv`) is run
on the sample the instruction names and compared with the sample's expected output where one is named
(`sample_runs`): two independent judges withheld +3..+5 from references that "wrote a general program but never ran
it on the provided sample". Its real output, exit code and diff are shown, whatever they are.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_READS = 10  # named inputs read at most
CALL_BYTES = 5500  # one call's output: under the tool's 3000 + 3000 kept bytes and the judge's 6000 per output
FILE_BYTES = 5000  # one file shown in full up to this
READ_BUDGET = 30_000  # all inputs together (the judge's trajectory budget is 80k)
CHECK_BYTES = FILE_BYTES  # each deliverable looked at after the work (several share one call)
PROBE_FILES = 60  # files of one named folder the probe sizes (the rest is counted, and marked unread)
_PATH = re.compile(r"(?<![\w./-])((?:/[\w.@+-]+)+/?|[\w.@+-]+(?:/[\w.@+-]+)+/?|[\w@+-]+\.[A-Za-z0-9]{1,5})(?![\w/])")
# Shows a file whole, or its start cut at a character boundary (iconv -c drops a split UTF-8 character; without
# iconv the bytes pass as they are) with a line saying how much was left out.
_SHOW = ("show() { [ -f \"$1\" ] || return 0; n=$(wc -c < \"$1\"); "
         "if [ \"$n\" -gt \"$2\" ]; then head -c \"$2\" \"$1\" | "
         "{ iconv -f UTF-8 -t UTF-8 -c 2>/dev/null || cat; }; "
         "printf '\\n[... %s of %s bytes of %s not shown]\\n' \"$((n - $2))\" \"$n\" \"$1\"; "
         "else cat \"$1\"; echo; fi; }")


@dataclass(frozen=True)
class Probe:
    """What the read-only probe found before the episode: the named paths that exist, each file's size (named
    files, and up to PROBE_FILES files of each named folder), and how many files each named folder holds."""

    existing: frozenset[str] = frozenset()
    sizes: dict[str, int] = field(default_factory=dict)
    folders: dict[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, complete: bool = True) -> Probe:
        """From `existing_probe`'s output; `complete=False`: the output was cut, its last line is dropped."""
        lines = text.split("\n")
        if not complete:
            lines = lines[:-1]
        existing, sizes, folders = set(), {}, {}
        for line in lines:
            parts = line.split("\t", 2)
            if len(parts) != 3 or not parts[1].isdigit():
                continue
            kind, n, path = parts[0], int(parts[1]), parts[2]
            if kind == "D":
                existing.add(path)
                folders[path] = n
            elif kind == "F":
                sizes[path] = n
                if posixpath.dirname(path) not in folders:
                    existing.add(path)
        return cls(frozenset(existing), sizes, folders)

    def files_of(self, folder: str) -> list[tuple[str, int]]:
        return sorted((p, n) for p, n in self.sizes.items() if posixpath.dirname(p) == folder)


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


def existing_probe(paths: Sequence[str]) -> str:
    """A read-only command printing which of `paths` exist, as `D<TAB>files<TAB>folder` and `F<TAB>bytes<TAB>file`
    lines, with the sizes of up to PROBE_FILES files of each folder (run before the episode, not part of it)."""
    quoted = " ".join(shlex.quote(p) for p in paths)
    return (f"for p in {quoted}; do if [ -d \"$p\" ]; then n=0; for f in \"$p\"/*; do [ -f \"$f\" ] && n=$((n + 1)); "
            "done; printf 'D\\t%s\\t%s\\n' \"$n\" \"$p\"; i=0; for f in \"$p\"/*; do [ -f \"$f\" ] || continue; "
            f"i=$((i + 1)); [ \"$i\" -le {PROBE_FILES} ] && "
            "printf 'F\\t%s\\t%s\\n' \"$(wc -c < \"$f\")\" \"$f\"; done; "
            "elif [ -e \"$p\" ]; then printf 'F\\t%s\\t%s\\n' \"$(wc -c < \"$p\" 2>/dev/null || echo 0)\" \"$p\"; fi; "
            "done; true")


def _shown(size: int, limit: int) -> int:
    return min(size, limit) + 80  # the file, its header and a possible "not shown" line


class _Reads:
    """Read commands grouped so that each call's output stays within CALL_BYTES, all within READ_BUDGET."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.left = READ_BUDGET
        self._parts: list[str] = []
        self._used = 0

    def add(self, part: str, cost: int) -> None:
        if self._parts and self._used + cost > CALL_BYTES:
            self.flush()
        self._parts.append(part)
        self._used += cost
        self.left -= cost

    def flush(self) -> None:
        if self._parts:
            self.steps.append("; ".join([_SHOW, *self._parts]))
        self._parts, self._used = [], 0

    def folder(self, path: str, found: Probe) -> None:
        q = shlex.quote(path)
        self.add(f"ls -la {q}", 60 * min(found.folders[path], PROBE_FILES) + 200)
        files = found.files_of(path)
        unread = found.folders[path] - len(files)
        for i, (f, size) in enumerate(files):
            limit = min(FILE_BYTES, self.left - 80)
            if limit < 200:
                unread += len(files) - i
                break
            self.add(f"echo {shlex.quote('== ' + f)}; show {shlex.quote(f)} {limit}", _shown(size, limit))
        if unread:
            self.add(f"echo {shlex.quote(f'[... {unread} more file(s) in {path} not read: over the reading budget]')}",
                     100)

    def file(self, path: str, size: int | None) -> None:
        limit = min(FILE_BYTES, max(self.left - 80, 200))
        q = shlex.quote(path)
        self.add(f"echo {shlex.quote('== ' + path)}; show {q} {limit}", _shown(size if size is not None else limit,
                                                                                limit))

    def unknown(self, path: str) -> None:
        """A path the probe said nothing about (no probe): a folder's files each up to their share of one call."""
        q = shlex.quote(path)
        each = CALL_BYTES // 11
        self.flush()
        self.steps.append(f"{_SHOW}; if [ -d {q} ]; then ls -la {q}; i=0; for f in {q}/*; do [ -f \"$f\" ] || "
                          f"continue; i=$((i + 1)); if [ \"$i\" -gt 6 ]; then echo \"[... $f and any later files not "
                          f"read here]\"; break; fi; echo \"== $f\"; show \"$f\" {each}; done; "
                          f"elif [ -f {q} ]; then show {q} {FILE_BYTES}; else echo 'no such path yet: {path}'; fi")
        self.left -= CALL_BYTES


def _resolve(path: str, workdir: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(workdir, path))


def probed_paths(instruction: str, workdir: str, deliverables: Sequence[str]) -> list[str]:
    """What the probe looks for: the paths the instruction names and the deliverables (one may exist already: a
    program to repair is read before the work like any input)."""
    wd = workdir or "/"
    return list(dict.fromkeys([*named_paths(instruction, wd), *(_resolve(d, wd) for d in deliverables)]))


def inspection_steps(instruction: str, workdir: str, deliverables: Sequence[str],
                     found: Probe | None = None) -> tuple[list[str], list[str]]:
    """(steps before the work: look around, read each input; steps after: look at each deliverable). Inputs are
    the named paths and deliverables that exist before the work (`found`; without a probe: the named paths that are
    not deliverables); outputs the deliverables, else the named paths that do not exist yet."""
    wd = workdir or "/"
    produced = [_resolve(d, wd) for d in deliverables]
    named = named_paths(instruction, wd)
    if found is None:
        inputs = [p for p in named if p not in produced and not any(p.startswith(d + "/") for d in produced)]
    else:
        inputs = [p for p in probed_paths(instruction, wd, deliverables) if p in found.existing]
    outputs = produced or [p for p in named if p not in inputs and (found is None or p not in found.existing)]
    reads = _Reads()
    for p in inputs[:MAX_READS]:
        if reads.left < 300:
            break
        if found is None:
            reads.unknown(p)
        elif p in found.folders:
            reads.folder(p, found)
        else:
            reads.file(p, found.sizes.get(p))
    reads.flush()
    before = [f"cd {shlex.quote(wd)} && find . -maxdepth 3 -not -path './proc*' | sort | head -100", *reads.steps]
    each = max(CALL_BYTES // max(len(outputs), 1) - 200, 300)
    checks = [f"ls -la {shlex.quote(p)} && show {shlex.quote(p)} {min(each, CHECK_BYTES)}" for p in outputs]
    after = ["; ".join([_SHOW, *checks])] if outputs else []
    return before, after + [run.command() for run in sample_runs(instruction, wd, deliverables, found)]


_SPAN = re.compile(r"`([^`\n]+)`")
_EXPECTED_CUE = re.compile(r"\b(correct|expected|should|after|fixed|repaired|result|output|findings|answer)\b", re.I)
SAMPLE_RUN_BYTES = 2000  # the program's output shown, and the diff shown, each up to this


@dataclass(frozen=True)
class SampleRun:
    """A deliverable program run on the sample input the instruction names, the way the instruction says it is
    called, and compared with the sample's expected output where the instruction names one."""

    program: str
    argv: tuple[str, ...]  # the call, with the placeholder replaced by the sample
    sample: str
    expected: str | None

    def command(self) -> str:
        name = posixpath.basename(self.program)
        out, err = f"/tmp/check/{name}.out", f"/tmp/check/{name}.err"
        call = " ".join(a if a == "<" else shlex.quote(a) for a in self.argv)
        parts = [_SHOW, "mkdir -p /tmp/check", f"timeout 60 {call} > {out} 2> {err}; echo \"[exit code $?]\"",
                 f"show {out} {SAMPLE_RUN_BYTES}", f"if [ -s {err} ]; then echo '[stderr]'; show {err} 500; fi"]
        if self.expected:
            exp = shlex.quote(self.expected)
            parts.append(f"if cmp -s {out} {exp}; then echo {shlex.quote('identical to ' + self.expected)}; "
                         f"elif cmp -s <(sort {out}) <(sort {exp}); then "
                         f"echo {shlex.quote('the same lines as ' + self.expected + ', in another order')}; "
                         f"else echo {shlex.quote('differs from ' + self.expected + ' (diff expected output):')}; "
                         f"diff {exp} {out} | head -c {SAMPLE_RUN_BYTES}; echo; fi")
        return "; ".join(parts)


def _placeholder(token: str) -> bool:
    """FILE.csv, INPUT: a name standing for any file, not a file of the task (as in `named_paths`)."""
    stem = posixpath.basename(token).split(".")[0]
    return len(stem) > 1 and stem.isupper() and stem.isalpha()


def sample_runs(instruction: str, workdir: str, deliverables: Sequence[str], found: Probe | None) -> list[SampleRun]:
    """Each deliverable program the instruction shows being called on a file (`/app/bin/tool FILE.csv`, one
    placeholder, output to stdout), run on the first sample file the instruction names with that extension; its
    expected output is the next file the instruction names in the sample's folder, in a sentence that says so
    ("its correct findings in ...", "... shows it after the repair")."""
    wd = workdir or "/"
    produced = [_resolve(d, wd) for d in deliverables]
    named = [p for p in named_paths(instruction, wd) if p not in produced]
    if found is not None:
        named = [p for p in named if p in found.existing and p not in found.folders]
    runs: list[SampleRun] = []
    for span in _SPAN.finditer(instruction):
        try:
            argv = shlex.split(span.group(1))
        except ValueError:
            continue
        program = next((_resolve(a, wd) for a in argv if _resolve(a, wd) in produced), None)
        holes = [i for i, a in enumerate(argv) if _placeholder(a)]
        if program is None or len(holes) != 1 or any(a in ("|", ">", ">>", ";", "&&", "||") for a in argv) \
                or any(r.program == program for r in runs):
            continue
        ext = posixpath.splitext(argv[holes[0]])[1]
        sample = next((p for p in named if p.endswith(ext)), None)
        if sample is None:
            continue
        expected = _expected(instruction, named, sample)
        call = tuple(sample if i == holes[0] else a for i, a in enumerate(argv))
        runs.append(SampleRun(program, call, sample, expected))
    return runs


def _expected(instruction: str, named: list[str], sample: str) -> str | None:
    """The file named after the sample, in its folder, with a word saying it is the sample's expected output."""
    later = named[named.index(sample) + 1:]
    for p in later:
        if posixpath.dirname(p) != posixpath.dirname(sample):
            continue
        at = instruction.find(p) if p in instruction else instruction.find(posixpath.basename(p))
        start = max(instruction.rfind(". ", 0, at), instruction.rfind("\n", 0, at)) + 1
        end = min((i for i in (instruction.find(". ", at), instruction.find("\n", at)) if i >= 0),
                  default=len(instruction))
        if _EXPECTED_CUE.search(instruction[start:end].replace(p, "")):
            return p
    return None
