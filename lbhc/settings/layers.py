"""Where each setting's value came from: one Layer per source (flags, LBHC_* variables, the
file), read by the loader and by the messages that name a bad value's origin."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Layer:
    """One source's values by path, and where each came from (a flag, a variable, a file)."""

    values: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    # Keys of the file that are no setting, kept so validation reports them as unknown.
    unknown: dict[str, Any] = field(default_factory=dict)

    def set(self, path: str, value: Any, origin: str) -> None:
        self.values[path] = value
        self.origins[path] = origin

    def nested(self) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        for path, value in self.values.items():
            group, name = path.split(".", 1)
            tree.setdefault(group, {})[name] = value
        for key, value in self.unknown.items():
            group, _, name = key.partition(".")
            if name:
                tree.setdefault(group, {})[name] = value
            else:
                tree[group] = value
        return tree


@dataclass
class Layers:
    """Highest precedence first."""

    arguments: Layer
    env: Layer
    file: Layer
    config_file: Path | None

    def winner(self, path: str) -> Layer | None:
        return next((layer for layer in self.all if path in layer.values), None)

    @property
    def all(self) -> tuple[Layer, Layer, Layer]:
        return (self.arguments, self.env, self.file)
