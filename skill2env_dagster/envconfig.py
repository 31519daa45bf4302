"""The one env loader: `S2E_<GROUP>_<FIELD>` variables -> a domain settings model, validated at once.

Each field of the settings model is read from `prefix + FIELD_NAME.upper()`; a blank variable means "use the
default". Validation happens here, when the code location loads, so a bad value stops the load with an error
that names the variable (`S2E_LLM_TIMEOUT='abc': Input should be a valid number`) instead of failing later or
deep inside a run. Unknown variables with the prefix are errors too: a typo must not silently fall back to a
default. Secret values are never echoed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, SecretStr, ValidationError

from skill2env_dagster.reasons import InputError, ReasonCode

M = TypeVar("M", bound=BaseModel)


def env_name(prefix: str, field: str) -> str:
    return f"{prefix}{field.upper()}"


def settings_from_env(model: type[M], prefix: str, env: Mapping[str, str] | None = None, *,
                      reason: ReasonCode = ReasonCode.INTERNAL_ERROR) -> M:
    """The settings the environment defines; InputError(reason) naming each bad or unknown variable."""
    env = os.environ if env is None else env
    fields = {env_name(prefix, name): name for name in model.model_fields}
    unknown = sorted(k for k in env if k.startswith(prefix) and k not in fields)
    if unknown:
        raise InputError(reason, f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(fields))}")
    values = {name: env[var] for var, name in fields.items() if env.get(var, "").strip()}
    try:
        return model.model_validate(values)
    except ValidationError as e:
        problems = [_describe(err, model, prefix, values) for err in e.errors()]
        raise InputError(reason, "invalid settings: " + "; ".join(problems)) from e


def _describe(err: Mapping[str, object], model: type[BaseModel], prefix: str, values: Mapping[str, str]) -> str:
    loc = err.get("loc") or ()
    msg = str(err.get("msg", "")).removeprefix("Value error, ")
    field = str(loc[0]) if isinstance(loc, tuple) and loc else ""
    if field not in model.model_fields:
        return msg
    var = env_name(prefix, field)
    secret = model.model_fields[field].annotation is SecretStr
    shown = "***" if secret else repr(values.get(field, "<unset>"))
    return f"{var}={shown}: {msg}"
