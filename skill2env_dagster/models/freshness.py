"""What the freshness scan proved about one skill partition (plain data: it crosses process boundaries)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """What the scan proved about one partition: the assets to run first (empty: fresh), and the assets that are
    missing and stay unneeded whatever runs (an ineligible skill's downstream). Asset names, so it pickles."""

    selection: tuple[str, ...]
    quiet: tuple[str, ...] = ()
