"""The Oracle's solve.sh as an agent's steps: the top-level commands of a bash script, found by scanning (never by
running) it, and run one fresh shell each with the shell state repeated; the result is the script's own."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from skill2env_dagster.rollouts.script_steps import agent_steps, is_state, split_commands

SCRIPT = textwrap.dedent("""\
    #!/bin/bash
    set -euo pipefail
    # where the data is
    cd "$WORK"
    OUT=out.txt
    log() { echo "[$1]" >> log.txt; }

    # count the rows
    n=$(wc -l < data.txt | tr -d ' '); echo "$n" > "$OUT"
    if [ "$n" -gt 2 ]; then
      echo big >> "$OUT"   # a trailing comment with fi in it
    else
      echo small >> "$OUT"
    fi
    for f in a b; do
      case "$f" in
        a) echo "case a" >> "$OUT" ;;
        (b) echo 'case b; done' >> "$OUT" ;;
      esac
    done
    python3 - <<'PY' >> "$OUT"
    print("here-doc with fi and done and ) inside")
    PY
    cat <<-EOF >> "$OUT"
    TAB-tabbed $OUT
    TAB-EOF
    grep -c case "$OUT" |
      tr -d ' ' >> "$OUT"
    echo "$(echo nested $(echo deeper))" && echo $'it\\'s' >> "$OUT" || true
    tr a-z A-Z <<< "here string" >> "$OUT"
    log done
    """).replace("TAB-", "\t")


def test_the_script_splits_into_its_top_level_commands():
    cmds = split_commands(SCRIPT)
    assert cmds is not None
    firsts = [next(ln for ln in c.splitlines() if not ln.lstrip().startswith("#")).strip() for c in cmds]
    assert firsts == ["set -euo pipefail", 'cd "$WORK"', "OUT=out.txt", 'log() { echo "[$1]" >> log.txt; }',
                      "n=$(wc -l < data.txt | tr -d ' '); echo \"$n\" > \"$OUT\"", 'if [ "$n" -gt 2 ]; then',
                      "for f in a b; do", "python3 - <<'PY' >> \"$OUT\"", 'cat <<-EOF >> "$OUT"',
                      'grep -c case "$OUT" |',
                      'echo "$(echo nested $(echo deeper))" && echo $\'it\\\'s\' >> "$OUT" || true',
                      'tr a-z A-Z <<< "here string" >> "$OUT"', "log done"]
    assert cmds[1].startswith("# where the data is\n")  # comments travel with the command after them
    assert [is_state(c) for c in cmds[:5]] == [True, True, True, True, False]


def test_steps_in_fresh_shells_do_what_the_script_does(tmp_path):
    whole, steps = tmp_path / "whole", tmp_path / "steps"
    for d in (whole, steps):
        d.mkdir()
        (d / "data.txt").write_text("1\n2\n3\n")
    subprocess.run(["bash", "-c", SCRIPT], env={"WORK": str(whole), "PATH": "/usr/bin:/bin"}, check=True)
    cmds = split_commands(SCRIPT)
    assert cmds is not None
    for step in agent_steps(cmds):  # each a new bash, as the agent's tool runs it
        subprocess.run(["bash", "-c", step], env={"WORK": str(steps), "PATH": "/usr/bin:/bin"}, check=True)
    assert (steps / "out.txt").read_text() == (whole / "out.txt").read_text()
    assert (steps / "log.txt").read_text() == (whole / "log.txt").read_text() == "[done]\n"


@pytest.mark.parametrize("script", [
    "if true; then\n  echo open\n",  # if without fi
    "echo 'open quote\n",
    "cat <<EOF\nno end\n",
    "echo a |\n",
    "echo )\n",
    "done\n",
])
def test_what_it_does_not_understand_is_none(script):
    assert split_commands(script) is None


def test_the_offline_solution_shape_is_one_program_step():
    script = "#!/bin/bash\nset -euo pipefail\npython3 - <<'SOLVER_EOF'\nimport sys\nprint(1)\nSOLVER_EOF\n"
    cmds = split_commands(script)
    assert cmds == ["set -euo pipefail", "python3 - <<'SOLVER_EOF'\nimport sys\nprint(1)\nSOLVER_EOF"]
    assert agent_steps(cmds) == ["set -euo pipefail\npython3 - <<'SOLVER_EOF'\nimport sys\nprint(1)\nSOLVER_EOF"]
