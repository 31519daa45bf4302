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

# Builtins that read /proc/<pid>/stat: s2e_s its state, s2e_pp its parent, s2e_t its start time (empty/0 when gone).
# (Field 2, the command name, may hold spaces and parentheses: the fields are read after its last ") ".)
_STAT = """s2e_st() { s2e_s=$1; s2e_pp=$2; s2e_t=${20}; }
s2e_info() { s2e_s=; s2e_pp=0; s2e_t=0; read -r s2e_l 2>/dev/null < "/proc/$1/stat" && s2e_st ${s2e_l##*) } || :; }
"""

# Kill every process not in $keep until a pass over /proc finds none of them alive, then SIGCONT what was kept.
# Each pass sends SIGSTOP to all (kill -1 spares only init and this shell), then SIGKILL to each one that is not
# dead yet. The end is a checked fixed point, not a number of passes: a pass that finds no process alive ends it,
# because only a live process can fork (what was stopped at the pass's start cannot; a child a fork in flight gave
# birth to is alive, and found by the next pass). A process that got SIGKILL counts as alive until it has exited:
# a write it had begun in the kernel could still land. Once dead (a zombie whose threads are all gone: a leader
# that called pthread_exit shows Z while its other threads run on) it counts no more, except a zombie
# that pid 1 collects when pid 1 is an init program (docker run --init): the reaper waits for init to take it
# (a fork bomb's dead would otherwise hold the pids limit against the verifier). The zombie of a `docker exec`
# (parent 0: the engine's shim, outside the container, collects it when the host schedules it) and a zombie of a
# kept parent are dead and not waited for: waiting on the host's scheduler made the old fixed count of 400 passes
# run out under load (issue 27). A pass costs no fork (builtins only; no `set --` either: callers' "$@" must
# survive), so the reaper works with a full process table. Only a process that still lives after REAP_SECONDS
# (e.g. stuck in the kernel) ends it early: then $left > 0 and $s2e_why lists what is left ("pid state ppid
# (name)"); else $left is 0.
REAP_SECONDS = 8
_ROUNDS = """s2e_c1=; read -r s2e_c1 2>/dev/null < /proc/1/comm || :
case "$s2e_c1" in docker-init|tini|dumb-init|catatonit|init) s2e_ri=1;; *) s2e_ri=0;; esac
read -r s2e_now s2e_l 2>/dev/null < /proc/uptime || s2e_now=0
s2e_end=$((${s2e_now%.*}+""" + str(REAP_SECONDS) + """))
left=1
while [ $left -gt 0 ]; do
  kill -STOP -1 2>/dev/null || :  # (dash rejects "kill -s STOP -1": "Illegal option -1")
  left=0; s2e_why=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$keep" in *" $p "*) continue;; esac
    s2e_info "$p"
    case "$s2e_s" in ""|X) continue;; esac
    kill -s KILL "$p" 2>/dev/null || :
    if [ "$s2e_s" = Z ]; then
      s2e_n=0; for s2e_x in "$d"/task/[0-9]*; do s2e_n=$((s2e_n+1)); done
      [ $s2e_n -gt 1 ] || [ "$s2e_ri$s2e_pp" = 11 ] || continue
    fi
    s2e_l=${s2e_l#*[(]}; left=$((left+1)); s2e_why="$s2e_why$p $s2e_s $s2e_pp (${s2e_l%) *}); "
  done
  [ $left -gt 0 ] || break
  read -r s2e_now s2e_l 2>/dev/null < /proc/uptime || s2e_now=0
  [ "${s2e_now%.*}" -lt "$s2e_end" ] || break
done
for p in $keep; do kill -s CONT "$p" 2>/dev/null || :; done
"""
REAP_ROUNDS = _STAT + _ROUNDS

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
_KEEP = """keep=" 1 ${KEEPER:-} "; s2e_up=" "; p=$$
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
    + _WHERE + _STAT + _KEEP + _ROUNDS +
    "rm -f /logs/verifier/reward.json /logs/verifier/reward.txt\n"
    '[ "$left" = 0 ] || { echo "skill2env guard: not graded, processes left that could not be stopped: $s2e_why" >&2;'
    " exit 1; }\n"
    "}; fi\n"
    "unset keep left p d s2e_s s2e_pp s2e_t s2e_l s2e_up s2e_more s2e_me s2e_c s2e_m s2e_mt\n"
    "unset s2e_c1 s2e_ri s2e_now s2e_end s2e_why s2e_n s2e_x\n"
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
