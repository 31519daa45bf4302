"""What a skill teaches, extracted offline from its own text with a source line for every item."""

from skill2env_dagster.knowledge.extract import EXTRACTOR_VERSION, cached_knowledge, extract_knowledge

__all__ = ["EXTRACTOR_VERSION", "cached_knowledge", "extract_knowledge"]
