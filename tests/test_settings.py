"""The settings module: strict environment parsing, loud in production."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ENV_EXAMPLE = Path(settings.BASE_DIR) / ".env.example"


def load_settings(env: dict) -> subprocess.CompletedProcess:
    code = "import dashboard.settings as s; print(s.DEBUG, s.DATABASES['default']['ENGINE'], s.REDIS_URL)"
    clean = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", **env}
    return subprocess.run(
        [sys.executable, "-c", code], env=clean, capture_output=True, text=True, cwd=settings.BASE_DIR
    )


def settings_values(env: dict, *names: str) -> dict:
    """Import the settings in a child process with exactly `env`; the named settings, as JSON."""
    code = "import json, dashboard.settings as s; "
    code += f"print(json.dumps({{n: getattr(s, n) for n in {names!r}}}, default=str))"
    clean = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", **env}
    result = subprocess.run(
        [sys.executable, "-c", code], env=clean, capture_output=True, text=True, cwd=settings.BASE_DIR
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_no_environment_at_all_refuses_to_start():
    """DEBUG unset is DEBUG off: production, which needs a SECRET_KEY."""
    result = load_settings({})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "SECRET_KEY" in result.stderr


def test_debug_unset_means_production():
    values = settings_values(
        {"SECRET_KEY": "k" * 50},
        "DEBUG", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
        "SECURE_PROXY_SSL_HEADER", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SESSION_COOKIE_AGE",
        "SESSION_EXPIRE_AT_BROWSER_CLOSE", "SECURE_REFERRER_POLICY",
    )  # fmt: skip
    assert values == {
        "DEBUG": False,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
        "SECURE_PROXY_SSL_HEADER": None,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SESSION_COOKIE_AGE": 8 * 3600,
        "SESSION_EXPIRE_AT_BROWSER_CLOSE": True,
        "SECURE_REFERRER_POLICY": "same-origin",
    }


def test_debug_true_is_a_working_development_setup():
    result = load_settings({"DEBUG": "true"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "django.db.backends.sqlite3", "redis://127.0.0.1:6379/0"]
    values = settings_values({"DEBUG": "true"}, "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SESSION_COOKIE_SECURE")
    assert values == {"SECURE_SSL_REDIRECT": False, "SECURE_HSTS_SECONDS": 0, "SESSION_COOKIE_SECURE": False}


def test_https_and_session_settings_come_from_the_environment():
    values = settings_values(
        {
            "DEBUG": "true",
            "SECURE_SSL_REDIRECT": "true",
            "SECURE_HSTS_SECONDS": "600",
            "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
            "SECURE_HSTS_PRELOAD": "true",
            "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
            "SESSION_COOKIE_AGE": "3600",
            "SESSION_EXPIRE_AT_BROWSER_CLOSE": "false",
        },
        "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
        "SECURE_PROXY_SSL_HEADER", "SESSION_COOKIE_AGE", "SESSION_EXPIRE_AT_BROWSER_CLOSE",
    )  # fmt: skip
    assert values == {
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 600,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],  # a tuple, through JSON
        "SESSION_COOKIE_AGE": 3600,
        "SESSION_EXPIRE_AT_BROWSER_CLOSE": False,
    }


def test_login_throttling_settings_come_from_the_environment():
    defaults = settings_values({"DEBUG": "true"}, "AXES_ENABLED", "AXES_FAILURE_LIMIT", "AXES_COOLOFF_TIME")
    assert defaults == {"AXES_ENABLED": True, "AXES_FAILURE_LIMIT": 5, "AXES_COOLOFF_TIME": "0:30:00"}
    for given, expected in (("2h", "2:00:00"), ("90m", "1:30:00"), ("1.5h", "1:30:00")):
        assert settings_values({"DEBUG": "true", "AXES_COOLOFF_TIME": given}, "AXES_COOLOFF_TIME") == {
            "AXES_COOLOFF_TIME": expected
        }
    changed = {"DEBUG": "true", "AXES_ENABLED": "false", "AXES_FAILURE_LIMIT": "3"}
    assert settings_values(changed, "AXES_ENABLED", "AXES_FAILURE_LIMIT") == {
        "AXES_ENABLED": False,
        "AXES_FAILURE_LIMIT": 3,
    }


def test_the_placeholder_secret_key_of_env_example_is_refused():
    placeholder = re.search(r"^SECRET_KEY=(.*)$", ENV_EXAMPLE.read_text(), re.M).group(1)
    result = load_settings({"SECRET_KEY": placeholder})
    assert result.returncode != 0 and "placeholder" in result.stderr


def test_production_without_a_secret_key_refuses_to_start():
    result = load_settings({"DEBUG": "false"})
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr
    ok = load_settings({"DEBUG": "false", "SECRET_KEY": "x" * 50, "DATABASE_URL": "postgres://u:p@127.0.0.1/db"})
    assert ok.stdout.split()[:2] == ["False", "django.db.backends.postgresql"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DEBUG", "maybe"),
        ("ROCKETMQ_POLL_INTERVAL", "soon"),
        ("SECURE_PROXY_SSL_HEADER", "HTTP_X_FORWARDED_PROTO"),
        ("SECURE_HSTS_SECONDS", "a year"),
        ("AXES_COOLOFF_TIME", "30"),
        ("AXES_COOLOFF_TIME", "0m"),
        ("AXES_COOLOFF_TIME", "2d"),
        ("AXES_FAILURE_LIMIT", "0"),
    ],
)
def test_malformed_values_are_errors(name, value):
    result = load_settings({"DEBUG": "true", name: value} if name != "DEBUG" else {name: value})
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and name in result.stderr


def test_the_secret_may_come_from_a_file(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file-" + "y" * 40 + "\n")
    code = "import dashboard.settings as s; print(s.SECRET_KEY)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": "/usr/bin:/bin", "SECRET_KEY_FILE": str(secret), "DEBUG": "false"},
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
    )
    assert result.stdout.strip() == "from-a-file-" + "y" * 40


def test_single_sign_on_settings_come_from_the_environment(tmp_path):
    names = (
        "OIDC_ISSUER",
        "OIDC_CLIENT_ID",
        "OIDC_CLIENT_SECRET",
        "OIDC_GROUPS_CLAIM",
        "OIDC_SCOPES",
        "PASSWORD_LOGIN",
    )
    assert settings_values({"DEBUG": "true"}, *names) == {
        "OIDC_ISSUER": "", "OIDC_CLIENT_ID": "", "OIDC_CLIENT_SECRET": "", "OIDC_GROUPS_CLAIM": "groups",
        "OIDC_SCOPES": ["openid", "profile", "email"], "PASSWORD_LOGIN": True,
    }  # fmt: skip
    secret = tmp_path / "oidc-secret"
    secret.write_text("from-a-file\n")
    given = {"DEBUG": "true", "OIDC_ISSUER": "https://sso.example.com/realms/console/", "OIDC_CLIENT_ID": "console",
             "OIDC_CLIENT_SECRET_FILE": str(secret), "OIDC_GROUPS_CLAIM": "realm_access.roles",
             "OIDC_SCOPES": "openid,groups", "PASSWORD_LOGIN": "false"}  # fmt: skip
    assert settings_values(given, *names) == {
        "OIDC_ISSUER": "https://sso.example.com/realms/console",  # discovery is {issuer}/.well-known/...
        "OIDC_CLIENT_ID": "console", "OIDC_CLIENT_SECRET": "from-a-file", "OIDC_GROUPS_CLAIM": "realm_access.roles",
        "OIDC_SCOPES": ["openid", "groups"], "PASSWORD_LOGIN": False,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"PASSWORD_LOGIN": "false"}, "nobody could log in"),
        ({"OIDC_ISSUER": "https://sso.example.com/realms/c", "OIDC_CLIENT_ID": "c"}, "OIDC_CLIENT_SECRET"),
        ({"OIDC_ISSUER": "http://sso.example.com/realms/c", "OIDC_CLIENT_ID": "c", "OIDC_CLIENT_SECRET": "s"},
         "https://"),  # plain HTTP only to this machine
        ({"OIDC_ISSUER": "https://sso.example.com", "OIDC_CLIENT_ID": "c", "OIDC_CLIENT_SECRET": "s",
          "OIDC_SCOPES": "profile,email"}, "openid"),
    ],
)  # fmt: skip
def test_single_sign_on_settings_that_cannot_work_are_refused(env, says):
    result = load_settings({"DEBUG": "true", **env})
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and says in result.stderr


def test_every_task_limit_fits_inside_the_visibility_timeout():
    """Read from the registered tasks themselves, not from the settings that computed them."""
    from dashboard.celery import app

    app.loader.import_default_modules()
    limits = {name: task.time_limit or settings.CELERY_TASK_TIME_LIMIT
              for name, task in app.tasks.items() if name.startswith("consumers.")}  # fmt: skip
    assert limits["consumers.dlq.tasks.run_redrive"] == settings.REDRIVE_TIME_LIMIT + 30
    assert limits["consumers.stats.tasks.run_statistics"] > settings.STATS_RUN_TIME_LIMIT
    assert limits["consumers.reports.tasks.build_report"] > settings.REPORT_BUILD_TIME_LIMIT
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] > max(limits.values())
    assert not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)  # tests use a real worker, not eager mode


def test_a_visibility_timeout_shorter_than_a_task_limit_is_refused():
    code = "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'dashboard.settings'; django.setup()"
    environment = {"PATH": "/usr/bin:/bin", "DEBUG": "true", "CELERY_VISIBILITY_TIMEOUT": "3600",
                   "REDRIVE_TIME_LIMIT": "21600", "VAR_DIR": "/tmp/console-settings-test"}  # fmt: skip
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                            cwd=settings.BASE_DIR)  # fmt: skip
    assert (
        result.returncode != 0 and "must exceed the longest task limit (21630 s, the redrive task's)" in result.stderr
    )


SETTINGS_PACKAGE = Path(settings.BASE_DIR) / "dashboard" / "settings"


def variables_read() -> dict:
    """Every variable the settings package reads (dashboard/settings/environment.py's READ),
    with its default, from a fresh import with DEBUG=true and nothing else."""
    code = "import json, dashboard.settings; from dashboard.settings.environment import READ; "
    code += "print(json.dumps(READ, default=str))"
    environment = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "DEBUG": "true"}
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                            cwd=settings.BASE_DIR)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def env_example_entries() -> dict[str, tuple[str, str]]:
    """Every variable .env.example names, set or commented out, as (its value, the comments that
    go with it): the comment lines above the run of settings it is in, and for a commented-out
    setting the rest of its line, e.g. "# STATS_RUN_DIR=var/stats-runs"."""
    entries, comments, after_setting = {}, [], False
    for line in ENV_EXAMPLE.read_text().splitlines():
        setting = re.match(r"#?\s*([A-Z][A-Z0-9_]*)=(.*)", line)
        if setting:
            value = setting[2]
            value = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
            entries[setting[1]] = (value, " ".join([*comments, line] if line.startswith("#") else comments))
        elif line.startswith("#"):
            comments = [line] if after_setting else [*comments, line]
        else:
            comments = []
        after_setting = bool(setting)
    return entries


def as_written(default) -> str:
    """A default as .env.example writes it: true/false, a list comma-separated, unset as empty,
    and a path in the checkout (var/, the virtualenv) relative to it."""
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, list):
        return ",".join(map(str, default))
    text = "" if default is None else str(default)
    checkout = str(settings.BASE_DIR) + "/"
    return text.removeprefix(checkout)


def test_env_example_names_every_variable_the_settings_read_and_nothing_else():
    """Both ways: a variable read but not in .env.example is one nobody can find; one in
    .env.example that nothing reads is a setting that does nothing. NAME_FILE of a secret counts."""
    read = set(variables_read())
    documented = set(env_example_entries())
    assert {"DEBUG", "SECRET_KEY", "SECRET_KEY_FILE", "OIDC_CLIENT_SECRET_FILE", "STATS_SPARK_CONF"} <= read
    assert {"ROCKETMQ_POLL_SECONDS_PER_1000_GROUPS", "HISTORY_DIR", "AXES_CLIENT_IP_CALLABLE"} <= read
    assert {"read, not in .env.example": sorted(read - documented),
            "in .env.example, never read": sorted(documented - read)} == {
        "read, not in .env.example": [], "in .env.example, never read": []}  # fmt: skip


def test_env_example_gives_each_variable_its_default_or_says_what_it_is():
    """.env.example shows the production values: where one is not the default (and the default
    is not simply unset), the comments that go with it say what the default is."""
    entries = env_example_entries()
    unsaid = {}
    for name, default in variables_read().items():
        value, comments = entries.get(name, ("", ""))
        written = as_written(default)
        if written and written != value and "default" not in comments.lower():
            unsaid[name] = {"default": written, ".env.example": value}
    assert unsaid == {}


def test_the_settings_read_the_environment_through_the_reader_only():
    """Only environment.py touches os.environ, so its record of what is read is complete."""
    reading = re.compile(r"\bos\.(?:environ|getenv)\b|\bgetenv\(")
    direct = {
        path.name: found
        for path in sorted(SETTINGS_PACKAGE.glob("*.py"))
        if path.name != "environment.py" and (found := reading.findall(path.read_text()))
    }
    assert direct == {}
    assert not (Path(settings.BASE_DIR) / "dashboard" / "settings.py").exists()  # the package, not a module beside it


def test_empty_means_unset_and_a_dollar_is_only_a_dollar(tmp_path):
    """django-environ reads `NAME=` as an empty value and `$OTHER` as OTHER's value; the settings
    keep their old meaning: the default, and the text as given (a secret may begin with "$")."""
    secret = tmp_path / "secret"
    secret.write_text("$SECRET_KEY" + "s" * 40 + "\n")
    given = {"DEBUG": "true", "SESSION_COOKIE_AGE": "", "ALLOWED_HOSTS": "", "EMAIL_HOST": "$HOME",
             "DEFAULT_FROM_EMAIL": "a\\$b@example.com", "SECRET_KEY_FILE": str(secret)}  # fmt: skip
    values = settings_values(given, "SESSION_COOKIE_AGE", "ALLOWED_HOSTS", "EMAIL_HOST", "DEFAULT_FROM_EMAIL")
    assert values == {"SESSION_COOKIE_AGE": 8 * 3600, "ALLOWED_HOSTS": ["127.0.0.1", "localhost"],
                      "EMAIL_HOST": "$HOME", "DEFAULT_FROM_EMAIL": "a\\$b@example.com"}  # fmt: skip
    code = "import os, dashboard.settings as s; "
    code += "print(s.SECRET_KEY == open(os.environ['SECRET_KEY_FILE']).read().strip())"
    result = subprocess.run([sys.executable, "-c", code], env={"PATH": "/usr/bin:/bin", **given}, capture_output=True,
                            text=True, cwd=settings.BASE_DIR)  # fmt: skip
    assert result.stdout.strip() == "True", result.stderr


def env_example() -> dict[str, str]:
    """The KEY=VALUE lines of .env.example (comments and commented-out settings left out) as
    systemd's EnvironmentFile reads them: the double quotes around a value removed."""
    pairs = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            quoted = len(value) >= 2 and value[0] == value[-1] == '"'
            pairs[name.strip()] = value[1:-1] if quoted else value
    return pairs


def sourced(shell: str, script: str) -> subprocess.CompletedProcess:
    """`script` run by `shell` in the project folder, in an environment of PATH alone."""
    return subprocess.run([shell, "-c", script], env={"PATH": "/usr/bin:/bin"}, capture_output=True,
                          cwd=settings.BASE_DIR, timeout=30)  # fmt: skip


@pytest.mark.parametrize("shell", ["bash", "sh"])  # sh: Debian's dash, a POSIX shell
def test_env_example_sources_cleanly_in_a_shell_with_the_values_systemd_reads(shell):
    """`set -a; . ./.env.example` exported every setting, or stopped at `REPORT_WEEKLY_AT=mon
    02:00` (the shell ran "02:00" as a command with REPORT_WEEKLY_AT=mon in its environment)."""
    syntax = sourced(shell, "exec " + shell + " -n .env.example")
    assert syntax.returncode == 0 and syntax.stderr == b"", syntax.stderr
    result = sourced(shell, "set -eu; set -a; . ./.env.example; env -0")
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    exported = dict(item.split("=", 1) for item in result.stdout.decode().split("\0") if item)
    example = env_example()
    assert {name: exported.get(name) for name in example} == example
    assert exported["REPORT_WEEKLY_AT"] == "mon 02:00" and exported["STATS_SPARK_MASTER"] == "local[*]"


def test_every_unquoted_value_of_env_example_means_the_same_to_a_shell():
    """A value with a space, a glob or anything else a shell reads is quoted (a new setting too)."""
    unsafe = {
        name: value
        for name, value in (line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines()
                            if line.strip() and not line.startswith("#"))
        if not re.fullmatch(r'[A-Za-z0-9_.,:/@%+=-]*|"[^"$`\\]*"', value)
    }  # fmt: skip
    assert unsafe == {}


def test_check_deploy_is_clean_with_the_production_example(tmp_path):
    """manage.py check --deploy prints no warning with the environment of .env.example. Its
    SECRET_KEY is an obvious placeholder (the settings refuse it), so a generated key of 50+
    random characters stands in; the database is a SQLite file in a temporary folder, so no
    server is needed."""
    example = env_example()
    assert example["DEBUG"] == "false" and example["SECRET_KEY"].startswith("REPLACE-ME")
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        **example,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=environment,
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout


def test_numeric_passwords_are_refused_and_ours_are_not(db):
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    from tests.conftest import PASSWORD

    with pytest.raises(ValidationError, match="entirely numeric"):
        validate_password("99999999999")
    validate_password(PASSWORD)  # the test users'
    validate_password("demo-admin-0a1b2c")  # the demo users' (devstack/demo.py: demo-ROLE-6 hex digits)
    validate_password("a-long-test-password-2")  # tests/changes/test_workflow.py's second approver


def test_the_history_is_under_var_dir_unless_a_url_or_its_older_name_says_where(tmp_path):
    base = {"DEBUG": "true", "VAR_DIR": str(tmp_path)}
    assert settings_values(base, "HISTORY_URL") == {"HISTORY_URL": str(tmp_path / "history")}
    assert settings_values({**base, "HISTORY_DIR": "/mnt/history"}, "HISTORY_URL") == {"HISTORY_URL": "/mnt/history"}
    shared = {**base, "HISTORY_DIR": "/mnt/history", "HISTORY_URL": "s3://bucket/history"}
    assert settings_values(shared, "HISTORY_URL") == {"HISTORY_URL": "s3://bucket/history"}
