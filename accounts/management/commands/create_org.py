import sys
from typing import IO, Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.urls import reverse

from accounts.management.base import run_service
from accounts.organizations.selectors import user_password_link
from accounts.organizations.services import organization_create, user_create, user_password_set
from accounts.plans.catalogue import PLAN_ORDER


class Command(BaseCommand):
    # Django's system checks load every URL and view first; migrate runs them at every start (docs/commands.md#start-up)
    requires_system_checks: list[str] = []
    help = (
        "Create an organization. With --owner-email, says how the owner signs in (a one-time link to set a "
        "password, or --password-stdin). Prints the org slug last."
    )
    stealth_options = ("stdin",)  # tests hand the password in as call_command(..., stdin=...)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--plan", default=None, choices=PLAN_ORDER, help="left out: the DEFAULT_PLAN setting (docs/tenancy.md)"
        )
        parser.add_argument("--owner-email", default=None, help="created if it does not exist; becomes owner")
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the new owner's password from the first line of standard input (instead of a link)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        email = options["owner_email"]
        password = None
        if options["password_stdin"]:
            if not email:
                raise CommandError("--password-stdin sets the owner's password: give --owner-email too")
            password = password_read(options.get("stdin") or sys.stdin)
        # all or nothing: no owner account left behind when the organization cannot be created
        with transaction.atomic():
            owner = run_service(user_create, email=email) if email else None
            if owner is not None and password is not None:
                if owner.has_usable_password():
                    raise CommandError(
                        f"{owner.email} already has a password: --password-stdin sets one only for an owner "
                        "who has none (they sign in with theirs; leave the option out)"
                    )
                run_service(user_password_set, user=owner, password=password)
            org = run_service(
                organization_create, slug=options["slug"], name=options["name"], plan=options["plan"], owner=owner
            )
        self.stdout.write(f"Created organization {org.slug} ({org.plan})")
        if owner is not None:
            for line in owner_sign_in(owner, password_given=password is not None):
                self.stdout.write(line)
        self.stdout.write(org.slug)


def password_read(stream: IO[str]) -> str:
    """The first line of ``stream``, without its line break; a password of spaces is still one."""
    password = stream.readline().rstrip("\r\n")
    if not password:
        raise CommandError("--password-stdin: no password on standard input (one line, e.g. from a file or a pipe)")
    return password


def owner_sign_in(owner: Any, *, password_given: bool) -> list[str]:
    """How the owner signs in, in words: the sign-in page, or first the link that sets a password."""
    sign_in = settings.SITE_URL.rstrip("/") + reverse("account_login")
    if password_given:
        return [f"Owner {owner.email} signs in at {sign_in} with the password given."]
    if owner.has_usable_password():
        return [f"Owner {owner.email} signs in at {sign_in} with the password they already have."]
    days = settings.PASSWORD_RESET_TIMEOUT / 86400
    return [
        f"Owner {owner.email} has no password yet: they set one at this one-time link (valid {days:g} days), "
        f"then sign in at {sign_in}:",
        f"  {user_password_link(user=owner)}",
    ]
