"""Reading settings: flags (the arguments given) beat LBHC_* variables, which beat the
--config file; each layer is read once, and remembers where each value came from so that an
error can say it."""

from __future__ import annotations

import difflib
import logging
import os
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from lbhc.settings.describe import describe
from lbhc.settings.layers import Layer, Layers
from lbhc.settings.model import Settings
from lbhc.settings.names import (
    BY_ARGUMENT,
    BY_PATH,
    FLAT_NAMES_NOTE,
    GROUPS,
    RETIRED_SETTINGS,
    SETTING_NAMES,
)
from lbhc.textfile import read_utf8

log = logging.getLogger(__name__)


class SettingsError(ValueError):
    """Settings that cannot be used: one line per problem, each naming the fix."""


class _LayerSource(PydanticBaseSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings], layer: Layer) -> None:
        super().__init__(settings_cls)
        self._layer = layer

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # __call__ gives the whole layer at once

    def __call__(self) -> dict[str, Any]:
        return self._layer.nested()


def load_settings(
    config_file: Path | None = None, *, base: type[Settings] = Settings, **arguments: Any
) -> Settings:
    """Settings from the flat arguments (flags; None means "not given"), LBHC_* and the file.
    Spellings of lbhc 0.1 are accepted with a warning naming the new one."""
    problems: list[str] = []
    # Variables are matched ignoring case, as pydantic-settings matches them by default.
    environ = {key.upper(): value for key, value in os.environ.items()}
    layers = Layers(
        arguments=_arguments_layer(arguments),
        env=_env_layer(environ, problems),
        file=_file_layer(config_file, problems) if config_file else Layer(),
        config_file=config_file,
    )
    # A typo'd variable may be why a setting is missing: said with the errors, else warned.
    unknown = unknown_variables(environ)
    if problems:
        raise SettingsError("\n".join([f"invalid settings: {p}" for p in problems] + unknown))
    settings_cls: type[Settings] = type(
        base.__name__,
        (base,),
        {
            "layers": (_LayerSource(base, layers.env), _LayerSource(base, layers.file)),
            "__annotations__": {"layers": ClassVar[tuple[PydanticBaseSettingsSource, ...]]},
        },
    )
    try:
        settings = settings_cls(**_with_every_group(layers.arguments.nested()))
    except ValidationError as exc:
        raise SettingsError("\n".join([describe(exc, layers, base), *unknown])) from exc
    for line in unknown + _deprecations(layers):  # only once the settings are usable
        log.warning("%s", line)
    return settings


def _with_every_group(tree: dict[str, Any]) -> dict[str, Any]:
    # A group named by no layer is still validated field by field, so a missing required
    # setting is reported as `gce.project`, not as a missing `gce`.
    return {group: {} for group in GROUPS} | tree


def _arguments_layer(arguments: dict[str, Any]) -> Layer:
    layer = Layer()
    for argument, value in arguments.items():
        if value is None:
            continue
        name = BY_ARGUMENT.get(argument) or BY_PATH.get(argument)
        if name is None:
            raise TypeError(f"load_settings() got an unknown setting {argument!r}")
        layer.set(name.path, value, name.flag if name.is_flag else "arguments")
    return layer


def _env_layer(environ: dict[str, str], problems: list[str]) -> Layer:
    layer = Layer()
    for name in SETTING_NAMES:
        new, flat = environ.get(name.env), environ.get(name.flat_env)
        if new is not None and flat is not None and name.flat_env != name.env:
            problems.append(
                f"setting {name.path!r}: both {name.env} and {name.flat_env} are set; "
                f"{name.flat_env} is its old name: remove it"
            )
        elif new is not None:
            layer.set(name.path, new, name.env)
        elif flat is not None:
            layer.set(name.path, flat, name.flat_env)
    for retired, replacement in RETIRED_SETTINGS.items():
        if "LBHC_" + retired.upper() in environ:
            problems.append(
                f"setting {retired!r}: LBHC_{retired.upper()} no longer exists: {replacement}"
            )
    return layer


def unknown_variables(environ: dict[str, str]) -> list[str]:
    """A warning per LBHC_* variable that is no setting: a typo (LBHC_GCE_PROJEKT) would
    otherwise be ignored without a word while the same typo in the file is an error. A
    warning, not an error: the environment is shared with whatever else runs there."""
    known = {name.env for name in SETTING_NAMES} | {name.flat_env for name in SETTING_NAMES}
    known |= {"LBHC_" + retired.upper() for retired in RETIRED_SETTINGS}
    return [
        f"variable {variable} is no lbhc setting and is ignored{_close_variable(variable, known)}"
        for variable in sorted(environ)
        if variable.startswith("LBHC_") and variable not in known
    ]


def _close_variable(variable: str, known: set[str]) -> str:
    close = difflib.get_close_matches(variable, sorted(known), n=1, cutoff=0.8)
    return f" (did you mean {close[0]}?)" if close else ""


def _file_layer(path: Path, problems: list[str]) -> Layer:
    layer = Layer()
    label = str(path)
    for key, value in read_config_file(path).items():
        name = BY_ARGUMENT.get(key)
        if key in GROUPS and not isinstance(value, dict):
            fields = ", ".join(n.field for n in SETTING_NAMES if n.group == key)
            problems.append(
                f"setting {key!r}: expected a mapping of {key} settings ({fields}), "
                f"got a {_yaml_type(value)} in {label}"
            )
        elif key in GROUPS:
            for field_name, field_value in value.items():
                nested = BY_PATH.get(f"{key}.{field_name}")
                if nested is None:
                    layer.unknown[f"{key}.{field_name}"] = field_value
                    continue
                if nested.path in layer.values:
                    problems.append(_twice(nested.path, nested.argument, label))
                layer.set(nested.path, field_value, label)
        elif name is not None and key not in GROUPS:
            if name.path in layer.values:
                problems.append(_twice(name.path, key, label))
            layer.set(name.path, value, f"{label} (as {key})")
        elif key in RETIRED_SETTINGS:
            problems.append(f"setting {key!r}: no longer exists: {RETIRED_SETTINGS[key]}")
        else:
            layer.unknown[key] = value  # no setting: validation names it, with a guess
    return layer


def _twice(path: str, flat: str, label: str) -> str:
    group, field_name = path.split(".", 1)
    return (
        f"setting {path!r}: given twice in {label}, as {flat} and under {group}: "
        f"keep `{group}: {{{field_name}: ...}}`"
    )


def _deprecations(layers: Layers) -> list[str]:
    """One warning per old spelling used, in any layer: what to write instead."""
    lines = []
    for path, origin in layers.env.origins.items():
        name = BY_PATH[path]
        if origin == name.flat_env and name.flat_env != name.env:
            lines.append(f"setting {path!r}: {name.flat_env} is deprecated; set {name.env} instead")
    for path, origin in layers.file.origins.items():
        name = BY_PATH[path]
        if origin.endswith(f" (as {name.argument})"):
            lines.append(
                f"setting {path!r}: the flat key {name.argument}: in {layers.config_file} is "
                f"deprecated; write it under {name.group}: as {name.field}:"
            )
    return [f"{line} {FLAT_NAMES_NOTE}" for line in lines]


def read_config_file(path: Path) -> dict[str, Any]:
    """The file's mapping, or one clear line on why it cannot be one (checked before any
    setting is, with the file and the line in the message)."""
    where = f"config file {path}"
    if not path.exists():
        raise SettingsError(f"{where}: not found")
    if not path.is_file():
        raise SettingsError(f"{where}: not a regular file; expected a YAML file")
    text = read_utf8(path, where, "a YAML mapping of setting: value", SettingsError)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SettingsError(f"{where}: not valid YAML: {describe_yaml_error(exc)}") from exc
    except RecursionError as exc:
        raise SettingsError(f"{where}: nested too deeply to be settings") from exc
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise SettingsError(
            f"{where}: expected a YAML mapping of setting: value, got a {_yaml_type(document)}"
        )
    return {str(key): value for key, value in document.items()}


def describe_yaml_error(exc: yaml.YAMLError) -> str:
    """PyYAML's multi-line report as one line: where, then what."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{' '.join(str(problem).split())}"


def _yaml_type(value: object) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), type(value).__name__
    )
