"""Typed stage configs: YAML files plus ``key.sub=value`` command-line overrides, validated by pydantic.

Every stage (indexing, training, serving, evaluation) owns one pydantic model. ``load_config``
merges, in order: the model's defaults, an optional YAML file, then overrides; any validation
problem becomes a :class:`ConfigError` that names the offending key and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

ConfigT = TypeVar("ConfigT", bound=BaseModel)


class ConfigError(ValueError):
    """A config file or override that does not validate; the message lists every problem."""


def read_yaml_mapping(path: str | Path, what: str) -> dict[str, Any]:
    """A YAML file's top-level mapping (empty file: ``{}``); ``ValueError`` saying what is wrong
    with ``what`` (e.g. "config file") at ``path``: missing, not YAML, not a mapping."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{what} {p} does not exist")
    try:
        loaded = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{what} {p} is not valid YAML: {' '.join(str(exc).split())}") from exc
    if loaded is not None and not isinstance(loaded, dict):
        raise ValueError(f"{what} {p} must hold a mapping at the top level")
    return loaded or {}


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = target
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[keys[-1]] = value


def parse_override(text: str) -> tuple[str, Any]:
    """``"extraction.batch_size=8"`` → ``("extraction.batch_size", 8)`` (the value is parsed as YAML)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} is not of the form key.sub=value")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override {text!r} has an empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {text!r}: value is not valid YAML ({exc})") from exc
    return key, value


def load_config(
    model: type[ConfigT],
    path: str | Path | None = None,
    overrides: Sequence[str] = (),
    base: dict[str, Any] | None = None,
) -> ConfigT:
    """Build ``model`` from defaults, ``base`` (values a command derived), an optional YAML file and
    ``key=value`` overrides, later ones winning."""
    data: dict[str, Any] = dict(base or {})
    if path is not None:
        try:
            data.update(read_yaml_mapping(path, "config file"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
    for item in overrides:
        key, value = parse_override(item)
        _set_dotted(data, key, value)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
        )
        source = f" (from {path})" if path else ""
        raise ConfigError(f"invalid {model.__name__}{source}: {problems}") from exc


def dump_config(config: BaseModel) -> str:
    """YAML text of a config (what a run actually used), for manifests and logs."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
