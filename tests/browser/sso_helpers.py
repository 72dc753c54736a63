"""What the single sign-on browser tests share: Chromium kept on loopback (an identity provider's page may
name a web font, which must not leave the machine), and the steps of a sign-in."""

from __future__ import annotations

import re
from typing import Any

# anything not on loopback is refused by the browser itself: no test reaches the network
OFF_LOOPBACK = re.compile(r"^(?!https?://(127\.0\.0\.1|localhost)[:/])[a-z]+://")


def loopback_only(context: Any) -> None:
    context.route(OFF_LOOPBACK, lambda route: route.abort())


def loopback_page(browser: Any) -> Any:
    """A page in a browser context of its own (a person's own cookies), kept on loopback; close it with
    ``page.context.close()``."""
    context = browser.new_context()
    loopback_only(context)
    return context.new_page()


def password_sign_in(page: Any, base: str, email: str, password: str = "correct-horse-battery") -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", password)
    page.click("form button[type=submit]")


def oidc_idp_sign_in(page: Any, issuer: str, login: str) -> None:
    """At oidc-provider's own sign-in page: the login typed is the account (and its address); then its
    consent screen."""
    page.wait_for_url(re.compile(re.escape(issuer) + r"/interaction/"))
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(re.escape(issuer) + r"/interaction/"))
    page.get_by_role("button", name="Continue").click()


def member_role(page: Any, base: str, email: str) -> str:
    """The role Settings → Members shows for ``email`` (its selected option where the viewer may change it)."""
    page.goto(f"{base}/settings/")
    row = page.locator("tr", has_text=email)
    assert row.count() == 1, f"{email} is not a member: {page.locator('body').inner_text()[:1500]}"
    select = row.locator("select")
    if select.count():
        return str(select.locator("option:checked").inner_text()).strip().lower()
    return str(row.inner_text()).lower()
