"""Pydantic models, one per artifact or file format. Imports nothing from dagster."""
