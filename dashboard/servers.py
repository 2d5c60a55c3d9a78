"""The long-running processes of `rocketmq-console` (dashboard/cli.py): web server, worker, beat.

Each runs in the calling process, in which the settings are already loaded, and exits with
the server's own exit code, so systemd's Restart= sees what the server said.
"""

from __future__ import annotations

import argparse

from gunicorn.app.base import BaseApplication


class WebServer(BaseApplication):
    """gunicorn serving dashboard.wsgi, configured from these options only: no gunicorn.conf.py
    or GUNICORN_CMD_ARGS is read, so what runs is what the command line says. Django is already
    loaded in its master (settings checked, static files collected), so a new release needs a
    restart, as the unit does it, not a HUP: that would fork new workers from the old code."""

    def __init__(self, options: dict):
        self.options = options
        super().__init__()

    def load_config(self):
        for name, value in self.options.items():
            self.cfg.set(name, value)

    def load(self):
        from dashboard.wsgi import application

        return application


def web_options(args: argparse.Namespace) -> dict:
    return {
        "bind": [args.bind],
        "workers": args.workers,
        # a thread per kept-alive connection: htmx refreshes reuse theirs (docs/deployment.md)
        "worker_class": "gthread",
        "threads": args.threads,
        "graceful_timeout": args.graceful_timeout,
        "accesslog": args.access_logfile or None,
        "proc_name": args.prog,
        # gunicorn's control socket is one fixed path per user ($HOME/.gunicorn/gunicorn.ctl):
        # a second server of that user (the demo beside the tests) would take it over
        "control_socket_disable": True,
        "post_worker_init": _keep_rows_warm,
    }


def _keep_rows_warm(worker) -> None:
    """In each web process: the groups list's rows made again as soon as a poll lands (live/rows.py)."""
    from django.conf import settings

    from consumers.jobs.redis_client import get_redis
    from consumers.live import rows

    rows.keep_warm(settings.GROUPS_LIST_WARM_SECONDS, get_redis)


def serve(args: argparse.Namespace) -> None:
    from django.conf import settings
    from django.core.management import call_command

    if settings.STATIC_MANIFEST and not args.no_collectstatic:
        # hashed names for this release's files; unchanged files are not copied again
        call_command("collectstatic", interactive=False, verbosity=0)
    WebServer(web_options(args)).run()


def worker_argv(args: argparse.Namespace) -> list[str]:
    # prefork: tasks run in forked processes, where the task time limits apply
    argv = ["worker", "--pool", "prefork", "--loglevel", args.loglevel]
    if args.concurrency:
        argv += ["--concurrency", str(args.concurrency)]
    if args.hostname:
        argv += ["--hostname", args.hostname]
    return argv


def beat_argv(args: argparse.Namespace) -> list[str]:
    # the scheduler is the settings' (dashboard/beat.py): its state is in Redis, no file
    return ["beat", "--loglevel", args.loglevel]


def worker(args: argparse.Namespace) -> None:
    _celery(worker_argv(args), args.prog)


def beat(args: argparse.Namespace) -> None:
    _celery(beat_argv(args), args.prog)


def _celery(argv: list[str], prog: str) -> None:
    """`celery -A dashboard ARGV`, exiting as it does. The app object is handed over as
    Celery.start() does it: with -A, Celery would import the app from the working directory first."""
    from celery.bin.celery import celery as celery_command

    from dashboard.celery import app

    next(option for option in celery_command.params if option.name == "app").default = app
    celery_command.main(args=argv, prog_name=prog, auto_envvar_prefix="CELERY")
