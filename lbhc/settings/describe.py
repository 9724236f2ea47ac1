"""Settings as people read them: one line per invalid setting (its name, what was wrong,
what is expected, and the value and where it came from), and defaults for help and docs."""

from __future__ import annotations

import difflib
import re
import typing
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from lbhc.durations import duration_text
from lbhc.settings.model import Settings, group_model
from lbhc.settings.names import (
    BY_ARGUMENT,
    BY_PATH,
    SETTING_NAMES,
    lookup,
)
from lbhc.settings.types import is_duration

if TYPE_CHECKING:
    from lbhc.settings.layers import Layers

# pydantic's messages for these say what was wrong, not what is right: add that.
_TYPE_ERRORS = frozenset(
    {
        "int_parsing",
        "int_type",
        "int_from_float",
        "float_parsing",
        "float_type",
        "finite_number",
        "bool_parsing",
        "bool_type",
        "string_type",
    }
)


def describe(exc: ValidationError, layers: Layers, base: type[Settings]) -> str:
    lines = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"] if not isinstance(part, int)]
        item = next((part for part in error["loc"] if isinstance(part, int)), None)
        path = ".".join(loc[:2])
        message = " ".join(error["msg"].removeprefix("Value error, ").split())
        if not path:  # a check across settings that named none: its message names them
            lines.append(f"invalid settings: {message}")
            continue
        if error["type"] == "missing":
            message = _required(path, layers)
        elif error["type"] == "extra_forbidden":
            message = f"unknown setting in {layers.config_file or 'input'}" + _did_you_mean(path)
        else:
            if item is not None:
                message = f"{error.get('input')!r}: {message}"
            expected = _expected(base, path) if error["type"] in _TYPE_ERRORS else ""
            if expected:
                message += f"; expected {expected}"
            layer = layers.winner(path)
            if layer is not None:
                message += f" (got {_shown(layer.values[path])} from {layer.origins[path]})"
        lines.append(f"invalid settings: setting {path!r}: {message}")
    return "\n".join(lines)


def _required(path: str, layers: Layers) -> str:
    name = BY_PATH[path]
    ways = [f"pass {name.flag}"] if name.is_flag else []
    ways.append(f"set {name.env}")
    where = f"to {layers.config_file}" if layers.config_file else "to a --config FILE"
    ways.append(f"add `{name.field}:` under `{name.group}:` {where}")
    return "required: " + ", ".join(ways[:-1]) + ", or " + ways[-1]


def _did_you_mean(path: str) -> str:
    # Paths, and 0.1's flat names, whose typos are still likely in old files.
    candidates = {n.path: n.path for n in SETTING_NAMES} | {
        argument: name.path for argument, name in BY_ARGUMENT.items()
    }
    close = difflib.get_close_matches(path, list(candidates), n=1)
    if not close and "." in path:  # a typo in the field: compare within the group
        group, field = path.split(".", 1)
        fields = [n.field for n in SETTING_NAMES if n.group == group]
        close = [f"{group}.{f}" for f in difflib.get_close_matches(field, fields, n=1)]
    return f" (did you mean {candidates.get(close[0], close[0])!r}?)" if close else ""


def _field(base: type[Settings], path: str) -> FieldInfo | None:
    group, _, name = path.partition(".")
    if group not in base.model_fields or not name:
        return None
    fields: dict[str, FieldInfo] = group_model(base, group).model_fields
    return fields.get(name)


def _expected(base: type[Settings], path: str) -> str:
    """What a setting's type and bounds accept, for pydantic's type and range errors."""
    field = _field(base, path)
    if field is None:
        return ""
    annotation = field.annotation
    if annotation in (int | None, float | None):  # optional: unset means "lbhc decides"
        annotation = next(arg for arg in typing.get_args(annotation) if arg is not type(None))
    if annotation is bool:
        return "true or false"
    if isinstance(annotation, type) and issubclass(annotation, StrEnum):
        return "one of " + ", ".join(member.value for member in annotation)
    if annotation not in (int, float):
        return "a string" if annotation in (str, str | None) else ""
    kind = "an integer" if annotation is int else "a finite number"
    bounds = {
        key: getattr(rule, key)
        for rule in field.metadata
        for key in ("ge", "gt", "le")
        if getattr(rule, key, None) is not None
    }
    if "ge" in bounds and "le" in bounds:
        return f"{kind} from {bounds['ge']} to {bounds['le']}"
    if "gt" in bounds:
        return f"{kind} greater than {bounds['gt']}" + (
            f" and at most {bounds['le']}" if "le" in bounds else ""
        )
    return kind


def _shown(raw: object) -> str:
    """The value as given (not pydantic's half-converted one), short and credential-free."""
    text = repr(raw)
    text = re.sub(r"//[^/@\s]*@", "//***@", text)  # never echo a URL's user:password
    return text if len(text) <= 60 else text[:57] + "..."


def default_text(name: str) -> str:
    """A setting's default (by path or flat name) as a user would write it."""
    field = _field(Settings, lookup(name).path)
    assert field is not None
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        default: Any = field.default_factory()  # type: ignore[call-arg]
    else:
        default = field.default
    if is_duration(field.metadata):
        return duration_text(float(default))
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, list):
        return ",".join(default) or "none"
    if default is None:
        return "none"
    if isinstance(default, float):
        return f"{default:g}"
    return str(getattr(default, "value", default))
