"""While the partitions run, the main process loads what the analytics import (on matplotlib's Agg backend)."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
from skill2env_dagster.cli.runner.warm import warm_analytics_imports
assert "sklearn.feature_extraction.text" not in sys.modules and "matplotlib.pyplot" not in sys.modules
warm_analytics_imports().join(120)
import matplotlib
assert "sklearn.feature_extraction.text" in sys.modules, "scikit-learn's vectorizer not loaded"
assert "matplotlib.pyplot" in sys.modules, "pyplot not loaded"
assert matplotlib.get_backend().lower() == "agg", matplotlib.get_backend()
"""


def test_warming_loads_the_analytics_libraries_in_the_background():
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
