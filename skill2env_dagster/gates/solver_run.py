"""The verifier's way to run a program the solver wrote: `/tests/run_as_solver`, shipped in every task's tests/.

A verifier that runs the solver's program (a bot to fix, a script to repair, a CLI to finish) must not run it as
root with the grading readable: the program then reads /tests/expected.json (or globs /tests/*.json) and prints
the key, and scores 1 on every metric (blind review of creator run 3, task 09). So every task gets this helper
(written at the freeze by tasks/builder.py, and into the creator's trial copies), and the creator is told to run
solver code only through it (creator/rules.py); the gate's `answer_key` stage (gates/answer_key.py) rejects a task
whose verifier runs solver code that can read /tests or /solution, whatever the verifier's language.

    /tests/run_as_solver [-w DIR]... [-r DIR]... -- COMMAND [ARG]...

It makes /tests and /solution mode 0700 (root keeps reading them; the verifier is root), makes each `-w DIR`
(created if missing) writable and each `-r DIR` readable for everyone, checks that uid SOLVER_UID can read
neither grading folder, then runs COMMAND as uid/gid SOLVER_UID with no supplementary groups (setpriv, util-linux),
in the caller's working directory and environment. When COMMAND ends, every process left by that uid is killed
(by a process of that uid: no capability needed), so nothing it started can write after it. (`kill -KILL -1`, not
`kill -s KILL -1`: dash, Debian's /bin/sh, rejects the latter as "Illegal option -1".) Its exit code is
COMMAND's; 126 (COMMAND not run) when privileges cannot be dropped or the grading is still readable to it.

Needs CAP_SETUID/CAP_SETGID in the verifier's container, as Docker and Harbor give by default; the gate's hardened
container keeps exactly these two.
"""

from __future__ import annotations

import os
from pathlib import Path

from skill2env_dagster.models.task_dir import CONTAINER_SOLUTION, CONTAINER_TESTS

HELPER_NAME = "run_as_solver"
SOLVER_UID = 65534  # `nobody` in Debian images: a uid that owns no file of the image or the task
HELPER_PATH = f"{CONTAINER_TESTS}/{HELPER_NAME}"

HELPER = f"""#!/bin/sh
# skill2env run_as_solver (written by the harness; not part of the task's own grading). Usage:
#   {HELPER_PATH} [-w DIR]... [-r DIR]... -- COMMAND [ARG]...
# Runs COMMAND as uid {SOLVER_UID} that can read neither {CONTAINER_TESTS} nor {CONTAINER_SOLUTION}; -w DIR: made
# (if missing) and writable for it, -r DIR: readable for it. Exit code: COMMAND's, or 126 when it was not run.
s2e_u={SOLVER_UID}
s2e_sp=$(PATH=/usr/bin:/bin:/usr/sbin:/sbin command -v setpriv) || {{ echo "run_as_solver: no setpriv" >&2; exit 126; }}
s2e_as() {{ "$s2e_sp" --reuid=$s2e_u --regid=$s2e_u --clear-groups "$@"; }}
while [ $# -gt 0 ]; do
  case "$1" in
    -w) [ $# -ge 2 ] || exit 126; mkdir -p "$2" && chmod -R a+rwX "$2" || exit 126; shift 2;;
    -r) [ $# -ge 2 ] || exit 126; chmod -R a+rX "$2" 2>/dev/null || :; shift 2;;
    --) shift; break;;
    *) break;;
  esac
done
[ $# -gt 0 ] || {{ echo "run_as_solver: no command" >&2; exit 126; }}
for s2e_d in {CONTAINER_TESTS} {CONTAINER_SOLUTION}; do [ -e "$s2e_d" ] && chmod 0700 "$s2e_d"; done
s2e_as /bin/sh -c : 2>/dev/null || {{ echo "run_as_solver: cannot become uid $s2e_u (CAP_SETUID)" >&2; exit 126; }}
if s2e_as /bin/sh -c 'ls {CONTAINER_TESTS}/ || ls {CONTAINER_SOLUTION}/' >/dev/null 2>&1; then
  echo "run_as_solver: {CONTAINER_TESTS} or {CONTAINER_SOLUTION} is readable to uid $s2e_u" >&2; exit 126
fi
s2e_as "$@"
s2e_rc=$?
s2e_as /bin/sh -c 'i=0; while [ $i -lt 100 ]; do kill -STOP -1 2>/dev/null; kill -KILL -1 2>/dev/null || exit 0;
  i=$((i+1)); done' >/dev/null 2>&1 || :
exit $s2e_rc
"""


def write_helper(tests_dir: Path) -> Path:
    """Put the helper into a task's tests/ (replacing whatever has its name), executable."""
    path = tests_dir / HELPER_NAME
    if path.is_symlink() or path.is_dir():
        raise ValueError(f"tests/{HELPER_NAME} is reserved for the harness's helper")
    path.write_text(HELPER, encoding="utf-8")
    os.chmod(path, 0o755)
    return path
