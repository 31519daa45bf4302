"""Prompt templates as jinja2 files, their content-hash versions, and the untrusted-text delimiter.

`prompt_version(name, model_fingerprint)` hashes a template, every template it includes/extends (transitively) and
the model settings, so editing a prompt changes the code_version of exactly the assets that render it. Templates
are read from the package's `prompts/` folder, or from `$S2E_PROMPTS_DIR` when set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import jinja2
import jinja2.meta

from skill2env_dagster.hashing import canonical_json, sha256_bytes

PROMPTS_ENV = "S2E_PROMPTS_DIR"
PACKAGE_PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
_OPEN, _CLOSE = "<<<", ">>>"


def prompts_dir(override: Path | str | None = None) -> Path:
    if override is not None:
        return Path(override)
    env = os.environ.get(PROMPTS_ENV, "").strip()
    return Path(env) if env else PACKAGE_PROMPTS


def untrusted(text: object, label: str = "skill_content", salt: object = "") -> str:
    """Fence untrusted text so instructions inside it read as data, and make the fence unforgeable.

    The fence id is a hash of the content (deterministic, so cache keys stay stable), and of `salt` when given: the
    judge salts an episode's fences with its rollout id, so two episodes with the same text (every no-op) do not
    show the same ids. Any `<<<`/`>>>` inside the text is defanged, so the text cannot close the fence early or open
    a fake one.
    """
    raw = "" if text is None else str(text)
    safe = raw.replace(_OPEN, "‹‹‹").replace(_CLOSE, "›››")
    keyed = f"{salt}\0{raw}" if salt else raw
    tag = sha256_bytes(keyed.encode("utf-8", "surrogatepass"))[:12]
    return f"{_OPEN}UNTRUSTED {label} id={tag}{_CLOSE}\n{safe}\n{_OPEN}END UNTRUSTED {label} id={tag}{_CLOSE}"


def environment(folder: Path | str | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(prompts_dir(folder))),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["untrusted"] = untrusted
    return env


def render(template_name: str, *, folder: Path | str | None = None, **variables: object) -> str:
    """Render a whole template; wrap skill text with the `untrusted` filter inside the template."""
    return environment(folder).get_template(template_name).render(**variables)


def render_messages(
    template_name: str, *, folder: Path | str | None = None, **variables: object
) -> list[dict[str, str]]:
    """Chat messages from a template's `system` and `user` blocks (either may be absent)."""
    tmpl = environment(folder).get_template(template_name)
    ctx = tmpl.new_context(dict(variables))
    messages = []
    for role in ("system", "user"):
        block = tmpl.blocks.get(role)
        if block is not None:
            text = "".join(block(ctx)).strip()
            if text:
                messages.append({"role": role, "content": text})
    if not messages:
        raise ValueError(f"template {template_name} has no system/user block")
    return messages


def template_sources(template_name: str, folder: Path | str | None = None) -> dict[str, str]:
    """The template and every template it references, transitively: all the text a prompt depends on."""
    env = environment(folder)
    seen: dict[str, str] = {}
    todo = [template_name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        source, _, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]  # the env is built with a loader
        seen[name] = source
        todo.extend(n for n in jinja2.meta.find_referenced_templates(env.parse(source)) if n)
    return seen


def prompt_version(
    name: str, model_fingerprint: Mapping[str, object] | None = None, *, folder: Path | str | None = None
) -> str:
    """Short content hash of a template (+ its includes) and the model settings."""
    sources = template_sources(name, folder)
    material = {
        "templates": {k: sha256_bytes(v.encode()) for k, v in sorted(sources.items())},
        "model": dict(model_fingerprint or {}),
    }
    return sha256_bytes(canonical_json(material).encode())[:16]
