"""Write a spool's polls to the history from any host: for the spool of a worker host that is
gone for good (its disk mounted elsewhere, or the folder copied), which no poll would drain."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from consumers.jobs.redis_client import get_redis
from consumers.live.config import history_spool, history_store
from consumers.live.spool import WRITE_ERRORS, HistorySpool, record_backlog
from consumers.models import Cluster


class Command(BaseCommand):
    help = "Write the polls kept in a history spool folder to the history, and clear that host's backlog."

    def add_arguments(self, parser):
        parser.add_argument("--dir", type=Path, help="the spool folder (HISTORY_SPOOL_DIR of its host; default: ours)")
        parser.add_argument("--host", help="the host named for it on the Clusters page (default: this spool's own)")

    def handle(self, *args, **options):
        own = history_spool()
        spool = HistorySpool(options["dir"], max_polls=settings.HISTORY_SPOOL_MAX_POLLS) if options["dir"] else own
        if not spool.root.is_dir():
            raise CommandError(f"no spool folder at {spool.root}")
        host, store, redis = options["host"] or spool.host, history_store(), get_redis()
        for folder in sorted(p for p in spool.root.iterdir() if p.is_dir()):
            cluster = Cluster.objects.filter(name=folder.name).first()
            try:
                written = spool.drain(folder.name, store)
            except WRITE_ERRORS as exc:
                raise CommandError(f"{folder.name}: the history store refused a write ({exc}); the rest stays") from exc
            left = len(spool.polls(folder.name))
            if cluster is not None and not left:
                record_backlog(redis, cluster.pk, host, None)
            self.stdout.write(f"{folder.name}: {written} poll(s) written, {left} left")
