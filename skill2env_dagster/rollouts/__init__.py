"""Solver rollouts: a terminal agent over any OpenAI-compatible endpoint in the task's hardened sandbox, the
rubric judge, calibration, hardening and SFT export. Domain code: imports no Dagster."""
