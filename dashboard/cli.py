"""`rocketmq-console`: the one command of an installed console (pip install .).

serve, worker and beat are what the systemd units run: gunicorn (gthread) on dashboard.wsgi,
a Celery worker with the prefork pool, Celery beat. migrate, create-user and check hand their
arguments to Django's own commands, and manage to any management command. From a checkout,
`python -m dashboard.cli` is the same command.

Each server runs in this process rather than as `python -m gunicorn` or `python -m celery`:
those put the working directory first on sys.path, where a checkout beside an installation
would be imported instead of the installed package.
"""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from consumers.apiclient import cli as api_client

PROG = "rocketmq-console"
# subcommand -> the management command it hands the rest of its line to, and what it does
DJANGO_COMMANDS = {
    "migrate": ("migrate", "create or update the database tables"),
    "create-user": ("create_user", "a user with a role (viewer, operator, approver, admin)"),
    "check": ("check", "Django's system checks (--deploy before going live)"),
}
LOG_LEVELS = ["debug", "info", "warning", "error", "critical"]


def version() -> str:
    """The installed release's version when this very file is one that release installed;
    otherwise the checkout's pyproject.toml, marked +checkout.

    Finding the name is not enough: `pip install .` in a checkout leaves
    `rocketmq_console.egg-info` there, and from the checkout's directory importlib.metadata
    finds it first, so a checkout would take a stale install's identity. An installed release
    has a RECORD (an egg-info has none) listing the files it put down; this file must be one.
    """
    here = Path(__file__).resolve()
    try:
        installed = metadata.distribution(PROG)
    except metadata.PackageNotFoundError:
        installed = None
    if installed is not None and installed.read_text("RECORD") is not None:
        if any(Path(installed.locate_file(f)).resolve() == here for f in installed.files or ()):
            return installed.version
    pyproject = here.parent.parent / "pyproject.toml"
    return tomllib.loads(pyproject.read_text())["project"]["version"] + "+checkout"


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog=PROG,
        description="Operations console for Apache RocketMQ.",
        epilog="migrate, create-user, check and manage pass the rest of the line on: "
        f"`{PROG} create-user -h` shows its options.",
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    top.set_defaults(prog=PROG)  # the servers name their processes after it (servers.py imports nothing from here)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="the web server (gunicorn, gthread workers)")
    serve.add_argument("--bind", default="127.0.0.1:8000", help="ADDRESS:PORT (default %(default)s)")
    serve.add_argument("--workers", type=_positive, default=4, help="processes (default %(default)s)")
    serve.add_argument("--threads", type=_positive, default=8, help="threads a process (default %(default)s)")
    serve.add_argument("--graceful-timeout", type=_positive, default=20, help="seconds (default %(default)s)")
    serve.add_argument("--access-logfile", default="-", help="file, or - for stdout (default)")
    serve.add_argument(
        "--no-collectstatic",
        action="store_true",
        help="do not collect the static files first (with STATIC_MANIFEST=true they are, so an "
        "upgrade never serves the pages of one release with the files of the last)",
    )

    worker = commands.add_parser("worker", help="a Celery worker (prefork pool)")
    worker.add_argument("-c", "--concurrency", type=_positive, help="processes (default: one a CPU)")
    worker.add_argument("-n", "--hostname", help="node name (default celery@HOST)")
    worker.add_argument("-l", "--loglevel", default="info", type=str.lower, choices=LOG_LEVELS)

    beat = commands.add_parser("beat", help="Celery beat: one or more (one sends, the others stand by)")
    beat.add_argument("-l", "--loglevel", default="info", type=str.lower, choices=LOG_LEVELS)

    # clients of a console's API, which may run elsewhere: no settings, no database
    api_client.add_parser(commands, client=f"cli/{version()}")
    mcp = commands.add_parser("mcp", help="an MCP server over the console's API (stdio or streamable HTTP)")
    mcp.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    mcp.add_argument("--port", type=_positive, default=8765, help="with --transport http (default %(default)s)")
    mcp.add_argument("--url", default="", help="the console's URL (default: $ROCKETMQ_CONSOLE_URL)")
    mcp.add_argument("--token-file", default="", help="a file holding the API token (default: the environment)")
    mcp.set_defaults(handler=_mcp)

    # the rest of the line goes to the management command, which parses it (and answers -h)
    for name, (_, summary) in DJANGO_COMMANDS.items():
        commands.add_parser(name, add_help=False, help=summary)
    commands.add_parser("manage", add_help=False, help="any management command (manage help: the list)")
    for subparser in commands.choices.values():
        subparser.set_defaults(subparser=subparser)  # its own usage line when refusing
    return top


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value


def main(argv: list[str] | None = None) -> None:
    top = parser()
    args, rest = top.parse_known_args(sys.argv[1:] if argv is None else argv)
    passes_on = args.command in DJANGO_COMMANDS or args.command == "manage"
    if rest and not passes_on:
        args.subparser.error(f"unrecognized arguments: {' '.join(rest)}")
    if hasattr(args, "handler"):  # api, mcp
        sys.exit(args.handler(args))
    _django_setup()
    if args.command == "manage":
        from django.core.management import execute_from_command_line

        execute_from_command_line([f"{PROG} manage", *rest])
    elif passes_on:
        from django.core.management import ManagementUtility

        command = ManagementUtility([PROG]).fetch_command(DJANGO_COMMANDS[args.command][0])
        command.run_from_argv([PROG, args.command, *rest])  # its usage line: "rocketmq-console NAME"
    else:
        from . import servers

        getattr(servers, args.command)(args)


def _mcp(args) -> int:
    """Bound to 127.0.0.1 over HTTP: an MCP endpoint speaks with its token for whoever reaches
    it, so it is for this host's assistants (a tunnel or proxy with its own login for others)."""
    from consumers.apiclient import mcp_server
    from consumers.apiclient.http import Connection, NotConfigured

    try:
        api = Connection.configured(f"mcp/{version()}", url=args.url, token_file=args.token_file)
    except NotConfigured as exc:
        print(f"{PROG} mcp: {exc}", file=sys.stderr)
        return 2
    mcp_server.serve(api, transport=args.transport, port=args.port)
    return 0


def _django_setup() -> None:
    """Settings first, for every command: a missing or wrong variable is one line naming it,
    not a traceback from inside gunicorn or Celery."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured

    try:
        django.setup()
    except ImproperlyConfigured as exc:
        sys.exit(f"{PROG}: the settings are incomplete: {exc}")


if __name__ == "__main__":
    main()
