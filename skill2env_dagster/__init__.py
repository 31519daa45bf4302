"""skill2env-dagster: compile Agent Skills into verified Harbor RL environments, as Dagster assets."""

__version__ = "0.1.0"
