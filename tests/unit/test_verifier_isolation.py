"""The exported verifier's Python must not run what the agent planted (blind review 3 of issue 25: a .pth with an
exit hook in site-packages wrote 1.0 on every metric after check.py printed 0.0). `-S` skips site (no .pth, no
sitecustomize), `-I` ignores PYTHON* variables and the user site."""

import re

from skill2env_dagster.tasks.verify.checkpy import TEST_SH


def test_every_python_of_the_verifier_entry_point_runs_isolated_without_site() -> None:
    calls = re.findall(r"python3[^\n]*", TEST_SH)
    assert len(calls) >= 2
    for call in calls:
        assert call.startswith("python3 -I -S "), call
