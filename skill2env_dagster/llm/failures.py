"""Every way a call can fail, mapped to what to do next and a reason code, with a message that says what to fix.

- worth another attempt (`retry`): 429, 408/409/5xx, timeouts, refused or reset connections, truncated or
  undecodable bodies (the SDK lets `json.JSONDecodeError` escape for a body cut mid-JSON);
- the structured-output format is refused (`fallback`): only a 400/422 whose error names `response_format`, or
  whose message says a JSON-schema/response-format request is unsupported — never any 400;
- configuration (`stop`, endpoint-wide, `llm_misconfigured`): 401/403 (the key), 404/405 (the model or the base
  URL), a 400 for an unsupported parameter (naming the variable that sets it). No retry can fix these, so the
  client remembers them for the endpoint and the run reports them once;
- this one request is refused (`stop`, `llm_request_rejected`): any other 4xx, e.g. a prompt over the context.

Messages name the URL and the `S2E_LLM_*` variable to change; they never contain the key (the caller redacts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import openai

from skill2env_dagster.llm.config import LLMConfig, env_var
from skill2env_dagster.reasons import ReasonCode

Action = Literal["retry", "fallback", "stop"]

_FORMAT = re.compile(r"response[_ ]format|json[_ ]schema|structured output|guided[_ ]json", re.I)
_REFUSED = re.compile(r"not supported|unsupported|does not support|unknown|unrecogni[sz]ed|invalid|not allowed|"
                      r"not permitted|extra (inputs|fields)", re.I)
_PARAM_REFUSED = re.compile(r"unsupported (parameter|value)|unrecogni[sz]ed (request )?(argument|parameter)|"
                            r"unknown (parameter|field|argument)|extra (inputs|fields) (are|is) not permitted|"
                            r"does not support|not supported", re.I)
# Request parameters we send -> the setting that decides them.
_TRANSPORT_MODULES = {"httpx", "httpx2", "httpcore", "h11", "h2", "anyio", "ssl"}
_PARAM_FIELDS = {"temperature": "temperature", "max_tokens": "max_tokens", "max_completion_tokens": "max_tokens",
                 "model": "model"}


@dataclass(frozen=True)
class Failure:
    action: Action
    reason: ReasonCode
    detail: str
    endpoint_wide: bool = False  # a configuration error: remembered for the endpoint, reported once


def _server_text(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return " ".join(str(message).split())[:300]


def format_unsupported(exc: openai.APIStatusError) -> bool:
    """The server says it cannot do the structured-output format we asked for (and nothing else is wrong)."""
    if exc.status_code not in (400, 422):
        return False
    if getattr(exc, "param", None) == "response_format":
        return True
    text = _server_text(exc)
    return bool(_FORMAT.search(text) and _REFUSED.search(text))


def _refused_param(exc: openai.APIStatusError) -> str | None:
    """The field whose value the server refused, when the error says a parameter is unsupported."""
    text = _server_text(exc)
    code = getattr(exc, "code", None) or ""
    if code not in ("unsupported_parameter", "unsupported_value") and not _PARAM_REFUSED.search(text):
        return None
    param = getattr(exc, "param", None)
    if param in _PARAM_FIELDS:
        return _PARAM_FIELDS[param]
    return next((field for name, field in _PARAM_FIELDS.items() if re.search(rf"\b{name}\b", text)), None)


def classify(exc: BaseException, cfg: LLMConfig) -> Failure:
    """What a failed request means (see module docstring). Unknown exception types are not classified here."""
    url = cfg.endpoint
    if isinstance(exc, openai.APITimeoutError):
        return Failure("retry", ReasonCode.LLM_UNAVAILABLE,
                       f"no answer from {url} within {cfg.timeout:g}s ({env_var('timeout')})")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        why = f"{type(cause).__name__}: {cause}" if cause else _server_text(exc)
        return Failure("retry", ReasonCode.LLM_UNAVAILABLE,
                       f"cannot reach {url} ({why[:200]}); is the server up? ({env_var('base_url')})")
    if isinstance(exc, ValueError):  # json.JSONDecodeError / UnicodeDecodeError from the SDK reading the body
        return Failure("retry", ReasonCode.LLM_UNAVAILABLE,
                       f"{url} sent a truncated or undecodable body ({type(exc).__name__}: {str(exc)[:120]})")
    if isinstance(exc, OSError) or is_transport_error(exc):  # a reset or cut connection the SDK did not wrap
        return Failure("retry", ReasonCode.LLM_UNAVAILABLE,
                       f"connection to {url} failed mid-response ({type(exc).__name__}: {str(exc)[:120]})")
    if isinstance(exc, openai.APIStatusError):
        return _classify_status(exc, cfg)
    return Failure("stop", ReasonCode.LLM_MISCONFIGURED, f"client set-up for {url} failed: {_server_text(exc)}",
                   endpoint_wide=True)


def is_transport_error(exc: BaseException) -> bool:
    """An exception from the HTTP stack itself (httpx and below), whatever version the SDK ships with."""
    return type(exc).__module__.split(".")[0] in _TRANSPORT_MODULES


def is_client_error(exc: BaseException) -> bool:
    """Raised by the SDK call for a reason `classify` knows; anything else is a bug of ours and propagates."""
    return isinstance(exc, (openai.OpenAIError, ValueError, OSError)) or is_transport_error(exc)


def _classify_status(exc: openai.APIStatusError, cfg: LLMConfig) -> Failure:
    url, status, text = cfg.endpoint, exc.status_code, _server_text(exc)
    key, model, base = env_var("api_key"), env_var("model"), env_var("base_url")
    if status == 429:
        return Failure("retry", ReasonCode.LLM_RATE_LIMITED, f"rate limited by {url} (429): {text}")
    if status in (408, 409) or status >= 500:
        return Failure("retry", ReasonCode.LLM_UNAVAILABLE, f"{url} answered {status}: {text}")
    if status == 401:
        sent = "no key was sent" if not cfg.api_key.get_secret_value() else "the key was refused"
        return Failure("stop", ReasonCode.LLM_MISCONFIGURED,
                       f"{url} answered 401 ({sent}): check {key}. Server said: {text}", endpoint_wide=True)
    if status == 403:
        return Failure("stop", ReasonCode.LLM_MISCONFIGURED, f"{url} answered 403 (the key may not use model "
                       f"{cfg.model!r}): check {key} and {model}. Server said: {text}", endpoint_wide=True)
    if status in (404, 405):
        return Failure("stop", ReasonCode.LLM_MISCONFIGURED,
                       f"{url}/chat/completions answered {status}: model {cfg.model!r} not served there or the "
                       f"base URL is wrong: check {model} and {base}. Server said: {text}", endpoint_wide=True)
    if format_unsupported(exc):
        return Failure("fallback", ReasonCode.LLM_MISCONFIGURED,
                       f"{url} does not accept the structured-output format ({env_var('structured_mode')}): {text}",
                       endpoint_wide=True)
    field = _refused_param(exc)
    if field is not None:
        return Failure("stop", ReasonCode.LLM_MISCONFIGURED, f"{url} refused the {field} setting ({status}): "
                       f"check {env_var(field)}. Server said: {text}", endpoint_wide=True)
    return Failure("stop", ReasonCode.LLM_REQUEST_REJECTED, f"{url} refused this request ({status}): {text}")
