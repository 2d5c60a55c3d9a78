import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from consumers.stats.runs import RunRefused, RunRequest, execute_run, request_run


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{value!r} is not a date (YYYY-MM-DD)") from None


class Command(BaseCommand):
    help = "Compute the statistics for a day or a range (a backfill) with spark-submit, and wait for it."

    def add_arguments(self, parser):
        parser.add_argument("--date", help="one day, YYYY-MM-DD (UTC)")
        parser.add_argument("--from", dest="first", help="first day of a range")
        parser.add_argument("--to", dest="last", help="last day of a range (included)")
        parser.add_argument("--cluster", help="one cluster (default: every cluster)")

    def handle(self, *args, date, first, last, cluster, **options):
        if date and (first or last):
            raise CommandError("give --date, or --from and --to, not both")
        if date:
            first = last = date
        if not (first and last):
            raise CommandError("give --date D, or --from D1 --to D2")
        try:
            run = request_run(RunRequest(_date(first), _date(last), cluster), trigger="command")
        except RunRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{run}: running spark-submit (log: {run.log_path or 'var/stats-runs'}) ...")
        run = execute_run(run.pk)
        if run.state != run.State.SUCCEEDED:
            raise CommandError(f"{run} failed:\n{run.error_tail}")
        self.stdout.write(
            self.style.SUCCESS(f"{run}: {run.input_rows} rows in, {run.output_rows} rows out, {run.seconds:.1f} s")
        )
