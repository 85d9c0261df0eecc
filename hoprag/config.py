"""Typed stage configs: YAML files plus ``key.sub=value`` command-line overrides, validated by pydantic.

Every stage (indexing, training, serving, evaluation) owns one pydantic model, built from
:class:`StrictModel`s: an unknown key (a typo such as ``extraction.batchsize``) is an error, never
silently ignored. ``load_config`` merges, in order: the model's defaults, an optional YAML file,
then overrides; any validation problem becomes a :class:`ConfigError` that names the offending key
and why (an unknown key: with the valid names at that level).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

ConfigT = TypeVar("ConfigT", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every config model: unknown keys are refused (a misspelled key would otherwise be
    dropped without a word and its default used)."""

    model_config = ConfigDict(extra="forbid")


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
        source = f" (from {path})" if path else ""
        raise ConfigError(f"invalid {model.__name__}{source}: {describe_errors(model, exc)}") from exc


def describe_errors(model: type[BaseModel], exc: ValidationError) -> str:
    """One line for all of ``exc``'s problems; an unknown key reads ``unknown setting a.b (valid: ...)``."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(x) for x in err["loc"]) or "<root>"
        if err["type"] == "extra_forbidden":
            problems.append(f"unknown setting {where}{_valid_names_hint(model, err['loc'])}")
        else:
            problems.append(f"{where}: {err['msg']}")
    return "; ".join(problems)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside a field's type (``X``, ``X | None``, ``list[X]``, ``dict[str, X]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType, list, tuple, dict):
        for arg in get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _valid_names_hint(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """`` (did you mean a.x? valid: x, y)``: the field names of the model holding an unknown key."""
    holder: type[BaseModel] | None = model
    for part in loc[:-1]:
        if holder is None:
            return ""
        if isinstance(part, int):  # a list item: same model
            continue
        field = holder.model_fields.get(str(part))
        holder = _model_in(field.annotation) if field is not None else None
    if holder is None:
        return ""
    names = sorted(holder.model_fields)
    prefix = ".".join(str(x) for x in loc[:-1])
    close = difflib.get_close_matches(str(loc[-1]), names, n=1)
    guess = f"did you mean {prefix + '.' if prefix else ''}{close[0]}? " if close else ""
    return f" ({guess}valid: {', '.join(names)})"


def dump_config(config: BaseModel) -> str:
    """YAML text of a config (what a run actually used), for manifests and logs."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
