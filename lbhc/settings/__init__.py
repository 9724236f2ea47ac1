"""lbhc's settings: one model of groups (lbhc/settings/groups.py), set by flag, LBHC_*
variable or --config file with that precedence, validated once with errors that name the
setting, what it expects and where the value came from."""

from lbhc.settings.describe import default_text
from lbhc.settings.load import SettingsError, load_settings
from lbhc.settings.model import GceOnlySettings, KubeOnlySettings, Settings
from lbhc.settings.names import (
    FLAG_SETTINGS,
    RUN_SETTINGS,
    SETTING_NAMES,
    environment_names,
    lookup,
)

__all__ = [
    "FLAG_SETTINGS",
    "RUN_SETTINGS",
    "SETTING_NAMES",
    "GceOnlySettings",
    "KubeOnlySettings",
    "Settings",
    "SettingsError",
    "default_text",
    "environment_names",
    "load_settings",
    "lookup",
]
