"""Load the analytics' heavy libraries while the partitions run.

The probe and the export import scikit-learn and matplotlib only when they run (seconds each), so that no
process importing the code location pays for them. In `skill2env run` the main process mostly waits while the
partitions run (on the workers, or on Docker), so it loads them then, and the analytics after the last
partition start seconds sooner: that wait is serial time, the same at every worker count.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)


def _load() -> None:
    try:
        from skill2env_dagster.export.plots import pyplot
        from skill2env_dagster.probe.index import vectorizer

        plt = pyplot()
        fig = plt.figure(figsize=(1, 1))  # the first text drawn loads the fonts: a fraction of a second more
        fig.text(0.5, 0.5, "0")
        fig.canvas.draw()
        plt.close(fig)
        vectorizer()
    except Exception:  # only an optimisation: the analytics import them again and report a real failure
        log.debug("warming the analytics' imports failed", exc_info=True)


def warm_analytics_imports() -> threading.Thread:
    """Start loading in a daemon thread (after any fork: a thread must not run while the pool forks)."""
    thread = threading.Thread(target=_load, name="warm-analytics", daemon=True)
    thread.start()
    return thread
