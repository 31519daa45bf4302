"""LLM settings are defined once (LLMConfig), read from S2E_LLM_* by the one env loader, validated when the code
location loads with errors that name the variable, and inherited unchanged by the Dagster resource."""

from __future__ import annotations

import subprocess
import sys

import dagster as dg
import pytest

from skill2env_dagster.llm.config import LLMConfig, env_var, from_env
from skill2env_dagster.reasons import InputError, ReasonCode
from skill2env_dagster.resources.llm import LLMResource

URL = "http://127.0.0.1:8000/v1"


def test_resource_fields_and_defaults_are_the_domain_ones():
    domain, resource = LLMConfig.model_fields, LLMResource.model_fields
    assert set(resource) == set(domain)
    for name, field in domain.items():
        default = field.get_default(call_default_factory=True)
        if name == "api_key":  # re-typed str for dg.EnvVar; same (empty) default
            assert resource[name].default == default.get_secret_value() == ""
            continue
        assert resource[name].get_default(call_default_factory=True) == default, name
        assert resource[name].metadata == field.metadata, name  # bounds (ge/le/gt) come along
    assert LLMResource().to_config() == LLMConfig()


def test_every_setting_is_documented(repo_root):
    readme = (repo_root / "README.md").read_text()
    assert [env_var(f) for f in LLMConfig.model_fields if env_var(f) not in readme] == []


@pytest.mark.parametrize(("env", "says"), [
    ({"S2E_LLM_TIMEOUT": "abc"}, "S2E_LLM_TIMEOUT='abc': Input should be a valid number"),
    ({"S2E_LLM_MAX_TOKENS": "0"}, "S2E_LLM_MAX_TOKENS='0'"),
    ({"S2E_LLM_STRUCTURED_MODE": "xml"}, "S2E_LLM_STRUCTURED_MODE='xml'"),
    ({"S2E_LLM_BASE_URL": URL}, "model (S2E_LLM_MODEL) is empty but base_url (S2E_LLM_BASE_URL) is set"),
    ({"S2E_LLM_MODEL": "m"}, "base_url (S2E_LLM_BASE_URL) is empty but model (S2E_LLM_MODEL) is set"),
    ({"S2E_LLM_BASE_URL": "127.0.0.1:8000", "S2E_LLM_MODEL": "m"}, "must start with http://"),
    ({"S2E_LLM_TIMOUT": "5"}, "unknown setting(s) S2E_LLM_TIMOUT"),
    ({"S2E_LLM_INPUT_USD_PER_MTOK": "3"}, "S2E_LLM_OUTPUT_USD_PER_MTOK) is unset"),
])
def test_bad_settings_name_the_variable(env, says):
    with pytest.raises(InputError) as err:
        from_env(env)
    assert err.value.reason is ReasonCode.LLM_MISCONFIGURED and says in str(err.value)


def test_settings_from_env_and_blank_means_default():
    cfg = from_env({"S2E_LLM_BASE_URL": URL, "S2E_LLM_MODEL": "m", "S2E_LLM_TIMEOUT": "5",
                    "S2E_LLM_TEMPERATURE": " ", "S2E_LLM_INPUT_USD_PER_MTOK": "0", "S2E_LLM_OUTPUT_USD_PER_MTOK": "0"})
    assert (cfg.timeout, cfg.temperature, cfg.cost(10, 10)) == (5.0, 0.2, 0.0)
    assert from_env({}).offline and from_env({}).cost(0, 0) == 0.0 and from_env({}).describe().startswith("offline")


def test_the_key_goes_through_envvar_and_is_never_echoed(monkeypatch):
    monkeypatch.setenv("S2E_LLM_API_KEY", "sk-never-shown")
    env = {"S2E_LLM_BASE_URL": URL, "S2E_LLM_MODEL": "m", "S2E_LLM_API_KEY": "sk-never-shown",
           "S2E_LLM_TIMEOUT": "-1"}
    with pytest.raises(InputError) as err:
        from_env(env)
    assert "sk-never-shown" not in str(err.value)
    res = LLMResource.from_env({**env, "S2E_LLM_TIMEOUT": "5"})
    assert isinstance(res.api_key, dg.EnvVar) and "sk-never-shown" not in repr(res)
    assert res.to_config().api_key.get_secret_value() == "sk-never-shown"


def test_code_location_refuses_to_load_with_a_bad_setting(repo_root):
    """Validated at load: `dagster dev` shows this error for the code location, naming the variable."""
    env = {"PATH": "/usr/bin:/bin", "S2E_LLM_TIMEOUT": "abc", "DAGSTER_HOME": "/tmp"}
    out = subprocess.run([sys.executable, "-c", "import skill2env_dagster.definitions"], cwd=repo_root, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "S2E_LLM_TIMEOUT='abc'" in out.stderr and "llm_misconfigured" in out.stderr
