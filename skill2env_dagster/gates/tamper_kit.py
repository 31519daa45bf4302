"""The tamper kit: attacks an agent could make on the reward, each of which must end with reward 0.

- `forge` (needs a verifier run): write reward.txt and reward.json, keep re-forging them from a detached process
  (setsid, double fork, deaf to TERM/HUP/INT; each rewrite is a rename, so that a read never catches a half-written
  file: a forgery read half-written would count as an unusable reward, a false "not vulnerable"), and plant
  stdlib-named modules (json.py, csv.py, …, plus every module the tests' Python files import) in the working
  directory, each of which forges the reward on import.
  One sandbox carries all three (the runner uses the no-op's, right after the no-op, before the scripts); the
  verify step must still give reward 0, as the no-op did.
- `forge:site_hooks` (needs a verifier run): a .pth and a sitecustomize.py that rewrite the reward when Python
  exits, in every site-packages of the image's Pythons; the verifier then runs as Harbor runs it, with no tamper
  check, and must still give 0 (a verifier Python without -S loads them: review 3 of issue 25's forge).
- `plant` (judged from the engine's view, no verifier run needed): shadow every tool and interpreter tests/ calls,
  both in PATH directories that come earlier and at the resolved path itself; plant sitecustomize.py,
  usercustomize.py and a .pth file where each Python on PATH looks; write /etc/ld.so.preload and a file under
  /etc/ld.so.conf.d; put a file under /tests. One container carries every plant (the same one, last, since the
  plants break it), and *each* planted path must
  appear in the tamper evidence: a path that does not (say, one a blanket `toolchain_writes` waives) is a hole.

Any attack that is not stopped rejects the task with `tamper_vulnerable`, naming the technique.
"""

from __future__ import annotations

import ast
import re
import time
from pathlib import Path

from skill2env_dagster.gates.changes import Change, leaves
from skill2env_dagster.gates.mutants import mean
from skill2env_dagster.gates.reap import strip_guard
from skill2env_dagster.gates.reward import all_zero
from skill2env_dagster.gates.sandbox import Sandbox, TrialStatus
from skill2env_dagster.gates.solver_run import HELPER_NAME
from skill2env_dagster.models.gate import AttemptKind, CheckResult, CheckVerdict, ShortcutAttempt
from skill2env_dagster.reasons import ReasonCode

KIT = "zz-s2e-kit"
MAX_TOOLS = 60
BASE_MODULES = ("json", "csv", "re", "pathlib", "math", "statistics", "collections")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.+-]*")
_SEGMENT = re.compile(r"\|\||&&|[|;&`(]|\$\(")
_SHELL_WORDS = frozenset((
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "in", "function",
    "select", "time", "return", "exit", "local", "export", "readonly", "set", "unset", "shift", "true", "false",
    "test", "echo", "printf", "read", "cd", "pwd", "eval", "exec", "trap", "wait", "source", "declare", "typeset",
    "let", "break", "continue",
))

FORGE = """mkdir -p /logs/verifier
printf 1 > /logs/verifier/reward.txt
printf '{"reward": 1}' > /logs/verifier/reward.json
F='trap "" TERM HUP INT; cd /logs; while :; do mkdir -p verifier 2>/dev/null; printf 1 > .f.txt; \
printf "{\\"reward\\": 1}" > .f.json; mv -f .f.txt verifier/reward.txt; mv -f .f.json verifier/reward.json; \
sleep 0.05 2>/dev/null || sleep 1; done'
if command -v setsid >/dev/null 2>&1; then (setsid sh -c "$F" >/dev/null 2>&1 < /dev/null &)
else (sh -c "$F" >/dev/null 2>&1 < /dev/null &); fi
for m in $MODS; do
  printf '%s\\n' "import os" "os.makedirs('/logs/verifier', exist_ok=True)" \
    "open('/logs/verifier/reward.json', 'w').write('{\\"reward\\": 1}')" \
    "open('/logs/verifier/reward.txt', 'w').write('1')" "os._exit(0)" > "$WD/$m.py"
done
echo forged
"""

# Prints "PLANT <technique> <path>" for every path it managed to plant (directories resolved with pwd -P, so the
# path is the one the engine reports). Order matters: the resolved tools are replaced by rename at the end
# (`mv` itself last), and /etc/ld.so.preload is written last with a shell builtin.
PLANT = f"""K={KIT}
realdir() {{ (cd "$1" 2>/dev/null && pwd -P); }}
put() {{ [ -d "$2" ] || mkdir -p "$2" 2>/dev/null; d=$(realdir "$2") || return 0; [ -n "$d" ] || return 0
  printf '#!/bin/sh\\nexit 0\\n' > "$d/$3" 2>/dev/null && printf 'PLANT %s %s\\n' "$1" "${{d%/}}/$3"; }}
for py in python3 python; do
  command -v "$py" >/dev/null 2>&1 || continue
  sites=$("$py" -c 'import site; print(site.getsitepackages()[0]); print(site.getusersitepackages())' 2>/dev/null)
  first=$(printf '%s\\n' "$sites" | sed -n 1p); user=$(printf '%s\\n' "$sites" | sed -n 2p)
  [ -n "$first" ] && put sitecustomize "$first" sitecustomize.py && put pth "$first" "$K.pth"
  [ -n "$user" ] && put usercustomize "$user" usercustomize.py
done
put tests /tests "$K"
put ld_conf /etc/ld.so.conf.d "$K.conf"
moves=; last=
for t in $TOOLS; do
  p=$(command -v "$t" 2>/dev/null) || continue
  case "$p" in /*) ;; *) continue;; esac
  case "$p" in /tests/*) continue;; esac
  old=$IFS; IFS=:
  for d in $PATH; do IFS=$old; [ "$d/$t" = "$p" ] && break; [ -d "$d" ] && put shadow "$d" "$t"; IFS=:; done
  IFS=$old
  rd=$(realdir "${{p%/*}}") || continue
  printf '#!/bin/sh\\nexit 0\\n' > "$rd/.$K-$t" 2>/dev/null || continue
  chmod 755 "$rd/.$K-$t" 2>/dev/null
  if [ "$t" = mv ]; then last="$rd/.$K-$t|$rd/$t"; else moves="$moves $rd/.$K-$t|$rd/$t"; fi
done
for m in $moves $last; do mv -f "${{m%%|*}}" "${{m#*|}}" 2>/dev/null && printf 'PLANT shadow %s\\n' "${{m#*|}}"; done
printf '/nonexistent/%s.so\\n' "$K" > /etc/ld.so.preload 2>/dev/null && printf 'PLANT ld_preload /etc/ld.so.preload\\n'
echo planted
"""


# Prints "HOOK <path>" for each hook written. At interpreter exit the hook writes reward.json (after whatever the
# verifier's Python wrote) and leaves a detached re-forger rewriting it for a few seconds (for a verifier whose
# shell writes the reward after Python exits); every write is a rename, so no read sees half a file.
_HOOK_BODY = ("def _w():\n try:\n  os.makedirs('/logs/verifier', exist_ok=True)\n"
              "  open('/logs/verifier/.s2e-h', 'w').write('{\\\"forged\\\": 1}')\n"
              "  os.replace('/logs/verifier/.s2e-h', '/logs/verifier/reward.json')\n except OSError:\n  pass\n"
              "def _f():\n _w()\n if os.fork() == 0:\n  os.setsid()\n"
              "  for _ in range(60):\n   _w(); time.sleep(0.05)\n  os._exit(0)\n"
              "atexit.register(_f)\n")
_HOOK_PY = f"import atexit, os, time; exec({_HOOK_BODY!r}, {{'atexit': atexit, 'os': os, 'time': time}})"
SITE_HOOKS = f"""for py in python3 python; do
  command -v "$py" >/dev/null 2>&1 || continue
  for d in $("$py" -c 'import site; print("\\n".join(site.getsitepackages()))' 2>/dev/null); do
    mkdir -p "$d" 2>/dev/null || continue
    printf '%s\\n' "$HOOK" > "$d/{KIT}-hook.pth" 2>/dev/null && printf 'HOOK %s\\n' "$d/{KIT}-hook.pth"
    printf '%s\\n' "$HOOK" > "$d/sitecustomize.py" 2>/dev/null && printf 'HOOK %s\\n' "$d/sitecustomize.py"
  done
done
echo hooked
"""


def tool_names(tests_dir: Path) -> list[str]:
    """Interpreters of the tests' files (shebangs) and the words in command position of their shell scripts
    (after a pipe, ;, &&, ||, $( or a shell keyword); the container keeps only those that resolve on PATH."""
    names: list[str] = []
    for p in sorted(tests_dir.rglob("*")):
        if not p.is_file() or p.is_symlink() or p == tests_dir / HELPER_NAME:  # ours, like the guard
            continue
        text = strip_guard(p.read_bytes()[:200_000].decode("utf-8", errors="replace"))  # the guard is ours
        first = text.split("\n", 1)[0]
        shebang = first[2:].split() if first.startswith("#!") else []
        names += [w.rsplit("/", 1)[-1] for w in shebang[:2]]
        if p.suffix in (".sh", ".bash") or (shebang and shebang[-1].rsplit("/", 1)[-1].endswith("sh")):
            for line in text.splitlines()[1 if shebang else 0:]:
                names += _command_words(line.split(" #", 1)[0] if not line.lstrip().startswith("#") else "")
    keep = [n for n in dict.fromkeys(names) if n not in _SHELL_WORDS and n != "env"]
    return keep[:MAX_TOOLS]


def _command_words(line: str) -> list[str]:
    out = []
    for segment in _SEGMENT.split(line):
        words = segment.split()
        while words and ("=" in words[0] or words[0] in _SHELL_WORDS or words[0] in ("!", "{", "}")):
            words = words[1:]  # assignments and keywords before the command
        if words and _WORD.fullmatch(words[0]):
            out.append(words[0])
    return out


def python_modules(tests_dir: Path) -> list[str]:
    """Top-level modules the tests' Python files import, plus common stdlib names (planted as forgers)."""
    mods = list(BASE_MODULES)
    for p in sorted(tests_dir.rglob("*.py")):
        try:
            tree = ast.parse(p.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods += [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                mods.append(node.module.split(".")[0])
    local = {p.stem for p in tests_dir.rglob("*.py")}
    return [m for m in dict.fromkeys(mods) if m.isidentifier() and m not in local and m not in ("os", "sys")]


def _attempt(name: str, family: str, failed: bool, status: str, evidence: str, seconds: float,
             metrics: dict[str, float] | None = None) -> ShortcutAttempt:
    m = metrics or {}
    return ShortcutAttempt(kind=AttemptKind.TAMPER, name=name, family=family,
                           verdict=CheckVerdict.FAIL if failed else CheckVerdict.PASS,
                           reason=ReasonCode.TAMPER_VULNERABLE if failed else None, status=status, metrics=m,
                           mean=round(mean(m), 6), evidence=evidence[:2000], seconds=round(seconds, 4))


def _skipped_attempt(name: str, evidence: str, seconds: float) -> ShortcutAttempt:
    return ShortcutAttempt(kind=AttemptKind.TAMPER, name=name, family=name.split(":")[0],
                           verdict=CheckVerdict.SKIPPED, status="not_run", evidence=evidence[:2000],
                           seconds=round(seconds, 4))


def run_forge(sb: Sandbox, tests_dir: Path, prelude: str = "") -> tuple[ShortcutAttempt, tuple[Change, ...]]:
    """In a sandbox in the image's state (after `prelude`, run in the same exec: sandbox.WIPE when the caller
    skipped a reset): forge the reward three ways, then the normal verify; the reward must be 0. Also returns
    what the attack changed on disk (a later reset of this container must undo it)."""
    start = time.perf_counter()
    mods = " ".join(python_modules(tests_dir))
    res = sb.run(prelude + FORGE, 30, env={"MODS": mods, "WD": sb.policy.workdir or "/tmp"})
    outcome = sb.verify()
    seconds = time.perf_counter() - start
    what = f"reward.txt/json forged, a detached re-forger, forging modules in the working directory ({mods})"
    if res.timed_out or res.died or b"forged" not in res.output:
        attempt = _skipped_attempt("forge", f"{what}: the attack did not run ({outcome.describe()})", seconds)
        return attempt, outcome.changes
    metrics = outcome.metrics
    failed = outcome.status is TrialStatus.OK and not all_zero(metrics)
    verdict = "the forged reward came through" if failed else f"reward 0 ({outcome.describe()})"
    attempt = _attempt("forge", "forge", failed, outcome.status.value, f"{what}: {verdict}", seconds, metrics)
    return attempt, outcome.changes


def run_site_hooks(sb: Sandbox) -> ShortcutAttempt:
    """In a sandbox in the image's state: a .pth and a sitecustomize.py that forge the reward when Python exits,
    in every site-packages folder of every Python on PATH; then the verifier runs as Harbor runs it, with no
    tamper check (our own runner stops at the evidence). The reward must stay 0: every Python of test.sh must run
    with -S (no site, so neither hook loads); -I alone still loads site-packages."""
    start = time.perf_counter()
    res = sb.run(SITE_HOOKS, 30, env={"HOOK": _HOOK_PY})
    planted = sorted({ln.split(" ", 1)[1] for ln in res.output.decode(errors="replace").splitlines()
                      if ln.startswith("HOOK ")})
    what = f"reward-forging .pth and sitecustomize.py in site-packages ({', '.join(planted[:6]) or 'none planted'})"
    if not planted:
        return _skipped_attempt("forge:site_hooks", f"{what}: no Python on PATH", time.perf_counter() - start)
    outcome = sb.verify(as_harbor=True)
    seconds = time.perf_counter() - start
    failed = outcome.status is TrialStatus.OK and not all_zero(outcome.metrics)
    verdict = ("the forged reward came through: run every Python of test.sh as `python3 -I -S`" if failed
               else f"reward 0 ({outcome.describe()})")
    return _attempt("forge:site_hooks", "forge", failed, outcome.status.value,
                    f"{what}, verifier run without the tamper check (as under Harbor): {verdict}", seconds,
                    outcome.metrics)


def run_plants(sb: Sandbox, tests_dir: Path) -> list[ShortcutAttempt]:
    """In a sandbox that is discarded afterwards: plant everything, then every plant must be tamper evidence."""
    start = time.perf_counter()
    tools = " ".join(tool_names(tests_dir))
    res = sb.run(PLANT, 60, env={"TOOLS": tools})
    planted: dict[str, list[str]] = {}
    for line in res.output.decode(errors="replace").splitlines():
        if line.startswith("PLANT "):
            _, technique, path = line.split(" ", 2)
            planted.setdefault(technique, []).append(path)
    settled = sb.settle()
    seconds = time.perf_counter() - start
    if b"planted" not in res.output or (settled.status is not TrialStatus.TAMPER_DETECTED and not planted):
        return [_attempt("plant", "plant", False, settled.status.value,
                         f"the plant script did not finish ({res.output[-200:]!r})", seconds)]
    flagged = {c.path for c in leaves(list(settled.changes)) if sb.policy.rule(c.path)}
    out = []
    for technique, paths in sorted(planted.items()):
        missed = [p for p in paths if p not in flagged]
        evidence = (f"not detected: {missed}" if missed else f"all {len(paths)} detected") + f" (planted {paths})"
        out.append(_attempt(f"plant:{technique}", "plant", bool(missed), settled.status.value, evidence,
                            seconds / max(1, len(planted))))
    return out


def kit_check(attempts: list[ShortcutAttempt], seconds: float) -> CheckResult:
    return CheckResult.over("tamper_kit", attempts, seconds, reason=ReasonCode.TAMPER_VULNERABLE,
                            passed=f"{len(attempts)} attacks, every one ended with reward 0 or was detected",
                            detail=lambda a: a.evidence)
