import getpass
import os

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from consumers.identity import ROLES, RoleError, create_or_update_user


class Command(BaseCommand):
    help = "Create a console user with a role (viewer, operator, approver or admin)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--password-env", metavar="VAR", help="read the password from this environment variable")
        parser.add_argument("--update", action="store_true", help="change the role (and password) of an existing user")

    def handle(self, *args, username, role, password_env, update, **options):
        password = None
        if password_env:
            password = os.environ.get(password_env)
            if not password:
                raise CommandError(f"environment variable {password_env} is empty or unset")
        elif options.get("interactive", True) and not update:
            password = getpass.getpass(f"Password for {username}: ")
        try:
            create_or_update_user(username, role, password, update=update)
        except (RoleError, ValidationError) as exc:
            raise CommandError("; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)) from None
        self.stdout.write(self.style.SUCCESS(f"{username}: {role}"))
