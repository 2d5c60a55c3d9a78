"""How the settings read the environment: django-environ, held to the rules they always kept.

`env.str`, `env.int`, `env.bool`, `env.list` and `env.float` are django-environ's, with its
reading and casting; what this module adds is what the console promised before it used the
library, so that no deployment's variables change meaning:

- An empty variable is an unset one: `NAME=` (systemd's EnvironmentFile, .env.example) means
  the default, for every type (django-environ would read it as "", False or an error).
- A boolean is true, 1 or yes, or false, 0 or no (any case); anything else is an error naming
  the variable, not false (django-environ reads "maybe", "on" and "2" as a boolean too).
- An integer that is not one is an error naming the variable.
- A list is comma-separated, each item trimmed and empty items dropped ("a, b," is a and b).
- A float is what Python's float() reads: django-environ's own float drops every character but
  digits, commas, dots and minus ("2e3" would be 23.0), so `env.float` reads the text and float()
  converts it, and a malformed value fails as it always did.
- A value is never a reference to another variable: django-environ reads `$OTHER` as OTHER's
  value, so a secret key that happens to begin with "$" (Django's own generator can make one)
  would silently become another variable, or its text would end up in an error message.
- `env.secret(NAME)`: the content of the file NAME_FILE names (a Docker or Kubernetes secret),
  trimmed, else NAME, else None; an unreadable file is an error naming NAME_FILE.
- `env.duration(NAME, "30m")`: minutes or hours such as 30m or 2h, as a timedelta.

Every variable asked for is recorded in READ with its default (NAME_FILE too for a secret):
tests/test_settings.py holds it against .env.example, both ways. The settings modules read the
environment through `env` only, never os.environ, so that record is complete.
"""

from __future__ import annotations

import os
from datetime import timedelta

import environ
from django.core.exceptions import ImproperlyConfigured
from environ.fileaware_mapping import FileAwareMapping

TRUE = ("true", "1", "yes")
FALSE = ("false", "0", "no")

READ: dict[str, object] = {}  # every variable the settings asked for: its default (None: none)


class Variables(FileAwareMapping):
    """os.environ as django-environ sees it here: empty variables left out (so the default
    applies), every "$" escaped (Env.escape_proxy turns it back after the reference check, so
    no value is read as a reference), and, for secrets, NAME_FILE's content first."""

    def __init__(self, *, files: bool):
        super().__init__(cache=False)
        self.files = files

    def __getitem__(self, name: str) -> str:
        path = os.environ.get(f"{name}_FILE") if self.files else None
        if path:
            try:
                value = super().__getitem__(name).strip()
            except OSError as exc:
                raise ImproperlyConfigured(f"{name}_FILE={path} cannot be read: {exc}") from None
        else:
            value = os.environ[name]
        if value == "":
            raise KeyError(name)
        return value.replace("$", r"\$")


class Env(environ.Env):
    """django-environ's Env on those Variables, recording each name in READ."""

    def __init__(self, *, files: bool = False):
        super().__init__()
        self.ENVIRON = Variables(files=files)
        self.escape_proxy = True  # the "$" that Variables escaped

    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        READ.setdefault(var, None if default is self.NOTSET else default)
        if var not in self.ENVIRON and default is not self.NOTSET and not parse_default:
            return default  # as given (django-environ would read a default "$X" as a reference too)
        return super().get_value(var, cast=cast, default=default, parse_default=parse_default)

    def bool(self, var, default=environ.Env.NOTSET):
        value = super().bool(var, default=default)
        given = os.environ.get(var)
        if given and given.lower() not in TRUE + FALSE:
            raise ImproperlyConfigured(f"{var} must be true or false, not {given!r}")
        return value

    def int(self, var, default=environ.Env.NOTSET):
        try:
            return super().int(var, default=default)
        except ValueError:
            raise ImproperlyConfigured(f"{var} must be an integer, not {os.environ[var]!r}") from None

    def float(self, var, default=environ.Env.NOTSET):
        return float(self.str(var, default=default))

    def list(self, var, cast=None, default=environ.Env.NOTSET):
        items = [item for item in super().list(var, cast=str.strip, default=default) if item]
        return [cast(item) for item in items] if cast else items

    def secret(self, var: str) -> str | None:
        READ.setdefault(f"{var}_FILE", None)
        return _files.str(var, default=None)

    def duration(self, var: str, default: str) -> timedelta:
        value = self.str(var, default=default)
        units = {"m": "minutes", "h": "hours"}
        try:
            amount = float(value[:-1])
            if value[-1:] not in units or amount <= 0:
                raise ValueError
        except ValueError:
            raise ImproperlyConfigured(f"{var} must be minutes or hours such as 30m or 2h, not {value!r}") from None
        return timedelta(**{units[value[-1]]: amount})


env = Env()
_files = Env(files=True)  # env.secret's: NAME_FILE before NAME
