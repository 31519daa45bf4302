"""The answer-key probe's planting (gates/answer_key.py) and the helper's text (gates/solver_run.py), on the host:
a planted program must behave exactly as before (same output, same exit code, same module namespace) and the
probe goes where Python allows it (after the docstring and `from __future__` imports)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from skill2env_dagster.creator.rules import answer_key_rule
from skill2env_dagster.gates.answer_key import MARKER_DIRS, plant, python_probe, shell_probe
from skill2env_dagster.gates.solver_run import HELPER, HELPER_NAME, write_helper

PY = '''#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""A bot."""
from __future__ import annotations

import sys
print(sorted(k for k in globals() if not k.startswith("__")), __doc__)
sys.exit(3)
'''


def _run(path, *argv):
    return subprocess.run([*argv, str(path)], capture_output=True, text=True, timeout=30)


def test_a_planted_python_program_behaves_as_before(tmp_path):
    before, after = tmp_path / "before.py", tmp_path / "after.py"
    before.write_text(PY)
    planted = plant("/app/bot.py", PY, "n0nce")
    assert planted is not None and "skill2env answer-key probe" in planted
    lines = planted.split("\n")
    assert lines[:4] == PY.split("\n")[:4] and lines[4].startswith("exec(")  # after the __future__ import
    after.write_text(planted)
    a, b = _run(before, sys.executable, "-I", "-S"), _run(after, sys.executable, "-I", "-S")
    assert (b.returncode, b.stdout, b.stderr) == (a.returncode, a.stdout, a.stderr) == (3, a.stdout, "")


@pytest.mark.parametrize("text", [
    "#!/bin/bash\nset -euo pipefail\necho \"$1\"\nexit 4\n",
    "#!/bin/sh\nset -eu\necho \"$1\"; exit 4",
    "echo \"$1\"\nexit 4\n",
])
def test_a_planted_shell_script_behaves_as_before(tmp_path, text):
    before, after = tmp_path / "before.sh", tmp_path / "after.sh"
    before.write_text(text)
    after.write_text(plant("/app/run.sh", text, "n0nce") or "")
    a = subprocess.run(["bash", str(before), "x y"], capture_output=True, text=True, timeout=30)
    b = subprocess.run(["bash", str(after), "x y"], capture_output=True, text=True, timeout=30)
    assert (b.returncode, b.stdout, b.stderr) == (a.returncode, a.stdout, a.stderr) == (4, "x y\n", "")


def test_what_is_not_a_program_or_does_not_parse_is_left_alone():
    assert plant("/app/data.csv", "a,b\n1,2\n", "n") is None
    assert plant("/app/tool", "#!/usr/bin/node\nconsole.log(1)\n", "n") is None
    assert plant("/app/broken.py", "def f(:\n", "n") is None
    assert plant("/app/tool", "#!/usr/bin/env python3\nprint(1)\n", "n") is not None


def test_the_probe_names_its_program_nonce_and_marker_places():
    for probe in (python_probe("abc123", "/app/x.py"), shell_probe("abc123", "/app/x.sh")):
        assert "abc123" in probe and all(d in probe for d in MARKER_DIRS) and probe.count("\n") == 1


def test_the_helper_is_written_and_stated_to_the_creator(tmp_path):
    path = write_helper(tmp_path)
    assert path.name == HELPER_NAME and path.read_text() == HELPER and path.stat().st_mode & 0o111
    assert subprocess.run(["sh", "-n", str(path)]).returncode == 0
    rule = answer_key_rule()
    assert f"/tests/{HELPER_NAME}" in rule and "answer_key_readable" in rule and "65534" in rule
