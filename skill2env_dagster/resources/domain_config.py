"""Dagster config classes generated from the domain's settings models, so a setting is declared exactly once.

Domain packages import no Dagster, so their settings are plain pydantic models; a resource that exposes them as
run config holds one nested field of the generated class (names, types, defaults, bounds and descriptions are
the domain model's). Tuples become lists (Dagster config has no tuple type); listed fields stay out (e.g. a
per-run id).
"""

from __future__ import annotations

import typing
from typing import Any

import dagster as dg
from pydantic import BaseModel, create_model
from pydantic.fields import FieldInfo


def _as_list(annotation: Any) -> Any:
    if typing.get_origin(annotation) is tuple:
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return list[args[0]] if args else list[Any]  # type: ignore[valid-type]  # built at runtime on purpose
    return annotation


def dagster_config(model: type[BaseModel], exclude: frozenset[str] = frozenset()) -> type[dg.Config]:
    """A `dg.Config` subclass with every field of `model` except `exclude`."""
    fields: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        if name in exclude:
            continue
        info = FieldInfo.merge_field_infos(f)
        if f.default_factory is None and isinstance(f.default, tuple):
            info = FieldInfo.merge_field_infos(f, default=list(f.default))
        fields[name] = (_as_list(f.annotation), info)
    return create_model(f"{model.__name__}Config", __base__=dg.Config, **fields)
