from django.core.management.base import BaseCommand, CommandError

from consumers.audit import verify_chain


class Command(BaseCommand):
    help = "Check the audit log's hash chain: exits non-zero at the first event edited or removed behind the app."

    def handle(self, *args, **options):
        check = verify_chain()
        if not check.ok:
            where = f"event #{check.broken_at.pk} ({check.broken_at})" if check.broken_at else "the end of the log"
            raise CommandError(
                f"audit chain broken at {where}: {check.why}; {check.checked} events before it are intact"
            )
        self.stdout.write(f"audit chain intact: {check.checked} events")
