"""The one kill script for leftover processes, and the guard every exported tests/test.sh starts with.

The gate and the rollouts reap an agent's processes before the verifier runs (REAP below), but an exported
task runs under Harbor or a plain `docker exec`, where nothing does: a process the agent left behind (setsid'd,
double-forked, deaf to TERM, its script's path hidden) could rewrite /logs/verifier/reward.json after grading.
So the freeze (tasks/builder.py) puts `GUARD` right after test.sh's shebang: before any grading, it stops and
kills every process in the container except init, the container's main process, the processes running this
verifier (test.sh's ancestors, e.g. Harbor's exec wrapper, and their other descendants, e.g. the `tee` of its
log) and $KEEPER when the runner names one (our trials do), then removes any reward file written before grading.
After that, nothing but the verifier can write the reward. It is ours, not the task's: `strip_guard` removes it
wherever a task's own lines are read (leak, tool and contamination checks; what a model is shown).
"""

from __future__ import annotations

# Kill every process not in $keep, in rounds: SIGSTOP to all (kill -1 spares only init and this shell), then
# SIGKILL each one by pid, until a round finds nothing left to kill; then SIGCONT what was kept. One round is not
# enough: a process caught in fork() by the SIGSTOP gives birth to a running child, which forks on. Zombies count
# as left, so the rounds also wait until init has collected the dead, which hold their pids until then (whatever
# runs next, the verifier, could not fork under the pids limit). This ends setsid'd daemons, double forks and fork
# bombs alike: they all live in the container's PID namespace. Only shell builtins are used (no `set --` either:
# callers' "$@" must survive), so the reaper needs no fork and works with a full process table. $left is 0 when
# all are gone.
REAP_ROUNDS = """round=0
left=1
while [ $left -gt 0 ] && [ $round -lt 400 ]; do
  kill -s STOP -1 2>/dev/null || :
  left=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$keep" in *" $p "*) continue;; esac
    kill -s KILL "$p" 2>/dev/null && left=$((left+1))
  done
  round=$((round+1))
done
for p in $keep; do kill -s CONT "$p" 2>/dev/null || :; done
"""

# Our trials: keep init, the keeper (init's child that holds the container up) and this shell.
REAP = 'keep=" 1 $KEEPER $$ "\n' + REAP_ROUNDS

GUARD_BEGIN = "# >>> skill2env guard"
GUARD_END = "# <<< skill2env guard"
SHELLS = ("sh", "bash", "dash")

# $keep for a verifier that nobody reaped for: init and $KEEPER; test.sh and its ancestors (the /proc PPid chain
# from $$ up to init or the exec's outside parent, 0); when init is an init program (docker run --init), the
# container's main process: init's child that started first; and every descendant of those (a runner's log reader
# such as `tee`: killing it would kill test.sh with SIGPIPE). An agent's process can be none of these: it runs
# from another exec, and a detached one is re-parented to init after the main process started. (Without an init
# program no child of init is kept: the agent's daemons, e.g. a tmux server, are init's children then.)
# Builtins only, like the rounds, and safe under `set -eu` (a shebang's `bash -e`).
_KEEP = """s2e_st() { s2e_pp=$2; s2e_t=${20}; }
s2e_info() { s2e_pp=0; s2e_t=0; read -r s2e_l 2>/dev/null < "/proc/$1/stat" && s2e_st ${s2e_l##*) } || :; }
keep=" 1 ${KEEPER:-} "; s2e_up=" "; p=$$
while [ "${p:-0}" -gt 1 ] 2>/dev/null; do
  keep="$keep$p "; s2e_up="$s2e_up$p "; s2e_info "$p"; p=$s2e_pp
done
case "$s2e_c" in docker-init|tini|dumb-init|catatonit|init)
  s2e_m=0; s2e_mt=0
  for d in /proc/[0-9]*; do
    s2e_info "${d#/proc/}"
    if [ "$s2e_pp" = 1 ] && { [ "$s2e_m" = 0 ] || [ "$s2e_t" -lt "$s2e_mt" ]; }; then
      s2e_m=${d#/proc/}; s2e_mt=$s2e_t
    fi
  done
  keep="$keep$s2e_m "; s2e_up="$s2e_up$s2e_m ";;
esac
s2e_more=1
while [ $s2e_more = 1 ]; do
  s2e_more=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$keep" in *" $p "*) continue;; esac
    s2e_info "$p"
    case "$s2e_up" in *" $s2e_pp "*) keep="$keep$p "; s2e_up="$s2e_up$p "; s2e_more=1;; esac
  done
done
"""

# Only as /tests/test.sh (where Harbor and our trials put it) and never under systemd: a copy run on a host, e.g.
# from a task folder, must not stop the host's processes.
_WHERE = """case "$0" in /*) s2e_me=$0;; *) s2e_me=$PWD/$0;; esac
s2e_c=; read -r s2e_c 2>/dev/null < /proc/1/comm || :
if [ "$s2e_me" = /tests/test.sh ] || [ "$s2e_me" = /tests/./test.sh ]; then [ "$s2e_c" != systemd ] && {
"""

GUARD = (
    f"{GUARD_BEGIN} (added when the task was frozen; not part of the task's grading): stop and kill every\n"
    "# process left in the container except init, the container's main process and this verifier's own, then\n"
    "# remove any reward written before grading, so that only this script can write the reward.\n"
    + _WHERE + _KEEP + REAP_ROUNDS +
    "rm -f /logs/verifier/reward.json /logs/verifier/reward.txt\n"
    "}; fi\n"
    "unset keep round left p d s2e_pp s2e_t s2e_l s2e_up s2e_more s2e_me s2e_c s2e_m s2e_mt\n"
    "unset -f s2e_st s2e_info 2>/dev/null\n"
    f"{GUARD_END}\n"
)


def interpreter(text: str) -> str | None:
    """The name of the program a script's shebang runs (`env`'s argument for `#!/usr/bin/env X`); None without
    a shebang."""
    first = text.split("\n", 1)[0]
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if words and words[0].rsplit("/", 1)[-1] == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return words[0].rsplit("/", 1)[-1] if words else ""


def is_guarded(text: str) -> bool:
    lines = text.split("\n", 2)
    return len(lines) > 1 and lines[1].startswith(GUARD_BEGIN)


def add_guard(text: str) -> str:
    """test.sh with GUARD right after its shebang (unchanged when it has it already). ValueError when test.sh is
    not a shell script: the guard is shell."""
    if is_guarded(text):
        return text
    if interpreter(text) not in SHELLS:
        raise ValueError("tests/test.sh must be a shell script (#!/bin/bash or #!/bin/sh): the harness puts its "
                         "guard against leftover processes at its top when the task is frozen")
    first, _, rest = text.partition("\n")
    return f"{first}\n{GUARD}{rest}"


def strip_guard(text: str) -> str:
    """test.sh as the task wrote it (the guard removed)."""
    if not is_guarded(text):
        return text
    first, _, rest = text.partition("\n")
    end = rest.find(GUARD_END + "\n")
    return f"{first}\n{rest[end + len(GUARD_END) + 1:]}" if end >= 0 else text
