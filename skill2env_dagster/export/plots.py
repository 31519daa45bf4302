"""PNG plots of the corpus statistics (matplotlib, Agg backend: no display on servers or in CI)."""

from __future__ import annotations

import io
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from skill2env_dagster.atomic import atomic_write_bytes
from skill2env_dagster.models.export import CorpusStats

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend, imported when a plot is drawn: importing it costs about a second,
    which every process importing the code location paid before."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot: the backend must be chosen first
    import matplotlib.pyplot as plt

    return plt


def _barh(title: str, labels: list[str], values: list[float], xlabel: str) -> Figure:
    fig, ax = pyplot().subplots(figsize=(7, max(2.0, 0.35 * len(labels) + 1)))
    ax.barh(labels[::-1], values[::-1], color="#4C72B0")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    for y, v in enumerate(values[::-1]):
        ax.text(v, y, f" {v:g}", va="center", fontsize=8)
    fig.tight_layout()
    return fig


def _axis_grid(stats: CorpusStats) -> Figure:
    axes_items = list(stats.axis_coverage.items())
    fig, grid = pyplot().subplots(2, 3, figsize=(12, 7))
    for ax, (axis, counts) in zip(grid.flat, axes_items, strict=False):
        ax.barh(list(counts)[::-1], list(counts.values())[::-1], color="#55A868")
        ax.set_title(axis, fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(grid.flat)[len(axes_items):]:
        ax.axis("off")
    fig.suptitle("Axis coverage of retained tasks")
    fig.tight_layout()
    return fig


def _figures(stats: CorpusStats) -> dict[str, Figure]:
    gates = {k: (v.pass_rate or 0.0) for k, v in stats.gate_pass_rates.items()}
    domains = sorted(stats.domain_mix.items(), key=lambda kv: -kv[1]["retained_tasks"])
    return {
        "funnel": _barh("Funnel", list(stats.funnel), list(stats.funnel.values()), "count"),
        "domain_mix": _barh("Retained tasks by domain", [d for d, _ in domains],
                            [c["retained_tasks"] for _, c in domains], "retained tasks"),
        "axis_coverage": _axis_grid(stats),
        "gate_pass_rates": _barh("Gate pass rates", list(gates), [round(v, 3) for v in gates.values()], "pass rate"),
        "skill_reasons": _barh(f"Why {stats.funnel.get('screened_out', 0)} skills were screened out (a skill may "
                               "carry several reasons)", list(stats.skill_reasons), list(stats.skill_reasons.values()),
                               "skills"),
    }


def write_plots(stats: CorpusStats, folder: Path) -> dict[str, Path]:
    """One PNG per figure, written atomically; returns name -> path."""
    out: dict[str, Path] = {}
    for name, fig in _figures(stats).items():
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
        pyplot().close(fig)
        out[name] = folder / f"{name}.png"
        atomic_write_bytes(out[name], buf.getvalue())
    return out
