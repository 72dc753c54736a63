"""Tokens with a prefix of their own: ours ("rb_", "rbo_", "rbr_", the webhook signing secret
"whsec_") and the well-known formats of the services an agent's tools talk to ("sk-ant-", "ghp_",
"xoxb-", "AKIA", JWTs, webhook URLs), and a few found by a fixed part inside them (".atlasv1.",
":APA91b", "Q~", "JQQJ9")."""

from __future__ import annotations

import re

from reasoningbank.scrubbing.primitives import (
    OWN_START,
    PREFIX_START,
    TOKEN_START,
    WORD_START,
    Rule,
    keep_prefix,
    not_after,
)

# ReasoningBank's own credentials: API tokens ("rb_"), OAuth access ("rbo_") and refresh ("rbr_")
# tokens, and webhook signing secrets ("whsec_", webhooks/signing.py; Stripe's and Svix's share the
# prefix). Their raw values are handed back (``ScrubResult.own_tokens``) so that the service that
# scrubbed a text can revoke them: a credential that reached the bank has leaked; only an exact match
# of a live one is revoked (docs/security/secret-scrubbing.md).
OWN_TOKEN_KINDS = ("reasoningbank_oauth_token", "reasoningbank_token", "webhook_signing_secret")
# not after a character of a token (a dash, tilde and dot included: Azure's secrets hold them)
_AZURE_START = not_after("A-Za-z0-9_~.-")

TOKEN_RULES: tuple[Rule, ...] = (
    # Our own tokens first, so that "Authorization: Bearer rbo_..." or "password=rb_..." reports
    # (and hands back for revocation) our token rather than a generic header or assignment.
    # API tokens: "rb_" + secrets.token_urlsafe(32); OAuth access and refresh tokens: "rbo_" and
    # "rbr_" + the same (accounts/oauth/protocol.py). Requiring both an upper- and a lower-case letter
    # skips snake_case and SCREAMING_CASE identifiers that start with "rb_"; a random 43-char
    # token lacks either with probability ~1e-10.
    Rule(
        "reasoningbank_token",
        ("rb_",),
        re.compile(
            OWN_START + r"rb_(?=[a-z0-9_-]{0,256}[A-Z])(?=[A-Z0-9_-]{0,256}[a-z])"
            r"[A-Za-z0-9_-]{20,}+"
        ),
    ),
    Rule(
        "reasoningbank_oauth_token",
        ("rbo_", "rbr_"),
        re.compile(
            OWN_START + r"rb[or]_(?=[a-z0-9_-]{0,256}[A-Z])(?=[A-Z0-9_-]{0,256}[a-z])"
            r"[A-Za-z0-9_-]{20,}+"
        ),
    ),
    # Our webhook signing secret: "whsec_" + secrets.token_urlsafe(32); Stripe's (32 letters and digits)
    # and Svix's (base64) have the same prefix and are secrets all the same.
    Rule("webhook_signing_secret", ("whsec_",), re.compile(PREFIX_START + r"whsec_[A-Za-z0-9+/=_-]{24,}+")),
    # Anthropic: sk-ant-api03-..., sk-ant-admin01-..., sk-ant-oat01-...
    Rule("anthropic_key", ("sk-ant-",), re.compile(PREFIX_START + r"sk-ant-[A-Za-z0-9_-]{20,}+")),
    # OpenAI: sk-<48>, sk-proj-..., sk-svcacct-..., sk-admin-... The digit requirement keeps
    # kebab-case words that happen to start with "sk-" out; a random 48-char key without a
    # digit is a ~1-in-5000 event.
    Rule(
        "openai_key",
        ("sk-",),
        re.compile(
            TOKEN_START + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?=[A-Za-z_-]{0,256}[0-9])"
            r"[A-Za-z0-9_-]{20,}+"
        ),
    ),
    Rule(
        "stripe_key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        re.compile(PREFIX_START + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}+"),
    ),
    Rule(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(PREFIX_START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{22,}+)"),
    ),
    # Slack: bot, user, app-level, legacy tokens, and token rotation's refresh tokens ("xoxe-1-...")
    # and rotated access tokens ("xoxe.xoxp-1-...").
    Rule(
        "slack_token",
        ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe-", "xoxe.", "xapp-"),
        re.compile(PREFIX_START + r"(?:xoxe\.)?(?:xox[abeprs]|xapp)-[A-Za-z0-9-]{10,}+"),
    ),
    Rule(
        "google_api_key",
        ("aiza",),
        re.compile(PREFIX_START + r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    ),
    # Google OAuth: a client secret ("GOCSPX-" + 28), an access token ("ya29."), a refresh token ("1//0")
    Rule(
        "google_oauth_secret",
        ("gocspx-",),
        re.compile(PREFIX_START + r"GOCSPX-[A-Za-z0-9_-]{24,}+"),
    ),
    Rule(
        "google_oauth_token",
        ("ya29.", "1//0"),
        re.compile(TOKEN_START + r"(?:ya29\.[A-Za-z0-9_-]{20,}+|1//0[A-Za-z0-9_-]{30,}+)"),
    ),
    Rule("huggingface_token", ("hf_",), re.compile(PREFIX_START + r"hf_[A-Za-z0-9]{34,}+")),
    Rule(
        "aws_access_key_id",
        ("akia", "asia"),
        re.compile(WORD_START + r"A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ),
    # JWTs: base64url(JSON header) always starts "eyJ" ('{"'). An unsigned one ("alg": "none")
    # has an empty signature ("header.payload."): it is a bearer credential all the same wherever
    # a server accepts it, so a payload that is JSON too ("eyJ") is enough, signature or not.
    Rule(
        "jwt",
        ("eyj",),
        re.compile(
            PREFIX_START + r"eyJ[A-Za-z0-9_-]{8,}+\.(?:eyJ[A-Za-z0-9_-]{2,}+\.[A-Za-z0-9_-]*+"
            r"|[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+)"
        ),
    ),
    # GitLab: personal, project/group (glpat-), pipeline trigger, deploy, runner, CI job, feed,
    # OAuth app, incoming-mail tokens; the newer routable form ends ".<payload>". And the legacy
    # runner registration token (GR1348941...).
    Rule(
        "gitlab_token",
        ("glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glft-", "glsoat-", "gloas-", "glimt-", "gr1348941"),
        re.compile(
            PREFIX_START + r"(?:gl(?:pat|ptt|dt|rt|cbt|ft|soat|oas|imt)-[A-Za-z0-9_-]{20,}+"
            r"(?:\.[A-Za-z0-9_-]{2,}+)?|GR1348941[A-Za-z0-9_-]{20,}+)"
        ),
    ),
    Rule("npm_token", ("npm_",), re.compile(PREFIX_START + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    # Prefixed tokens of other SaaS APIs an agent's tools use (docs/security/secret-scrubbing.md
    # lists them with a sample each).
    Rule("groq_key", ("gsk_",), re.compile(PREFIX_START + r"gsk_[A-Za-z0-9]{48,}+")),
    Rule("xai_key", ("xai-",), re.compile(PREFIX_START + r"xai-[A-Za-z0-9]{60,}+")),
    Rule("perplexity_key", ("pplx-",), re.compile(PREFIX_START + r"pplx-[A-Za-z0-9]{40,}+")),
    Rule(
        "replicate_token",
        ("r8_",),
        re.compile(TOKEN_START + r"r8_(?=[A-Za-z]{0,64}[0-9])[A-Za-z0-9]{30,}+(?![A-Za-z0-9_-])"),
    ),
    Rule("linear_key", ("lin_api_",), re.compile(PREFIX_START + r"lin_api_[A-Za-z0-9]{32,}+")),
    Rule(
        "notion_token",
        ("ntn_", "secret_"),
        re.compile(
            TOKEN_START + r"(?:ntn_[A-Za-z0-9]{40,}+|secret_(?=[a-z0-9]{0,64}[A-Z])(?=[A-Za-z]{0,64}[0-9])"
            r"[A-Za-z0-9]{43}(?![A-Za-z0-9_-]))"
        ),
    ),
    # Atlassian API tokens (ATATT3...) and Bitbucket access tokens (ATCTT3...); Bitbucket app passwords
    Rule("atlassian_token", ("atatt3", "atctt3"), re.compile(PREFIX_START + r"AT[AC]TT3[A-Za-z0-9_=-]{60,}+")),
    Rule(
        "bitbucket_app_password",
        ("atbb",),
        re.compile(PREFIX_START + r"ATBB[A-Za-z0-9_=.-]{24,}+"),
    ),
    Rule(
        "mailgun_key",
        ("key-",),
        re.compile(TOKEN_START + r"key-(?=[a-z]{0,31}[0-9])[0-9a-z]{32}(?![A-Za-z0-9_-])"),
    ),
    Rule("square_token", ("sq0atp-", "sq0csp-"), re.compile(PREFIX_START + r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}+")),
    Rule(
        "postman_key",
        ("pmak-",),
        re.compile(PREFIX_START + r"PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}(?![A-Za-z0-9])"),
    ),
    Rule("newrelic_key", ("nrak-",), re.compile(PREFIX_START + r"NRAK-[A-Z0-9]{27}(?![A-Za-z0-9])")),
    Rule(
        "grafana_token",
        ("glsa_", "glc_"),
        re.compile(PREFIX_START + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}+={0,2})"),
    ),
    Rule(
        "sentry_token",
        ("sntrys_", "sntryu_"),
        re.compile(PREFIX_START + r"(?:sntrys_[A-Za-z0-9+/=_-]{40,}+|sntryu_[a-f0-9]{64})"),
    ),
    Rule(
        "doppler_token",
        ("dp.st.", "dp.pt.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."),
        re.compile(PREFIX_START + r"dp\.(?:st|pt|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,32}\.)?[A-Za-z0-9]{40,}+"),
    ),
    Rule(
        "tailscale_key",
        ("tskey-",),
        re.compile(PREFIX_START + r"tskey-[a-z]{2,8}-[A-Za-z0-9]{6,}+-[A-Za-z0-9]{20,}+"),
    ),
    Rule("supabase_token", ("sbp_",), re.compile(PREFIX_START + r"sbp_[a-f0-9]{40}(?![A-Za-z0-9])")),
    Rule("pulumi_token", ("pul-",), re.compile(PREFIX_START + r"pul-[a-f0-9]{40}(?![A-Za-z0-9])")),
    Rule(
        "mapbox_token",
        ("sk.eyj",),
        re.compile(PREFIX_START + r"sk\.eyJ[A-Za-z0-9_-]{10,}+\.[A-Za-z0-9_-]{10,}+"),
    ),
    Rule(
        "age_secret_key",
        ("age-secret-key-1",),
        re.compile(PREFIX_START + r"AGE-SECRET-KEY-1[0-9A-Z]{58}(?![A-Za-z0-9])"),
    ),
    # PyPI API tokens are macaroons: "pypi-" + base64 of a header that always reads "pypi.org"
    Rule(
        "pypi_token",
        ("pypi-ageichlwas5vcmc",),
        re.compile(PREFIX_START + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}+"),
    ),
    Rule(
        "sendgrid_key",
        ("sg.",),
        re.compile(PREFIX_START + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
    ),
    Rule(
        "digitalocean_token",
        ("dop_v1_", "doo_v1_", "dor_v1_"),
        re.compile(PREFIX_START + r"do[por]_v1_[a-f0-9]{64}(?![A-Za-z0-9])"),
    ),
    Rule(
        "shopify_token",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        re.compile(PREFIX_START + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])"),
    ),
    Rule(
        "vault_token",
        ("hvs.", "hvb.", "hvr."),
        re.compile(PREFIX_START + r"hv[sbr]\.[A-Za-z0-9_-]{24,}+"),
    ),
    Rule("docker_token", ("dckr_pat_",), re.compile(PREFIX_START + r"dckr_pat_[A-Za-z0-9_-]{27,}+")),
    # Okta API tokens travel as "Authorization: SSWS <token>" (the authorization rule knows no such scheme)
    Rule(
        "okta_token",
        ("ssws",),
        re.compile(r"(?P<prefix>" + WORD_START + r"SSWS[ \t]{1,16})[A-Za-z0-9_-]{20,}+"),
        keep_prefix,
    ),
    Rule("heroku_key", ("hrku-",), re.compile(PREFIX_START + r"HRKU-[A-Za-z0-9_-]{40,}+")),
    Rule(
        "planetscale_token",
        ("pscale_tkn_", "pscale_pw_", "pscale_oauth_"),
        re.compile(PREFIX_START + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.-]{32,}+"),
    ),
    Rule(
        "flyio_token",
        ("fo1_", "fm1a_", "fm1r_", "fm2_"),
        re.compile(PREFIX_START + r"(?:fo1_[A-Za-z0-9_-]{40,}+|fm(?:1[ar]|2)_[A-Za-z0-9+/]{60,}+={0,3})"),
    ),
    Rule("onepassword_token", ("ops_eyj",), re.compile(PREFIX_START + r"ops_eyJ[A-Za-z0-9+/_-]{100,}+={0,3}")),
    Rule(
        "sourcegraph_token",
        ("sgp_",),
        re.compile(PREFIX_START + r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}(?![A-Za-z0-9])"),
    ),
    Rule(
        "brevo_key",
        ("xkeysib-", "xsmtpsib-"),
        re.compile(PREFIX_START + r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}(?![A-Za-z0-9])"),
    ),
    Rule("rubygems_token", ("rubygems_",), re.compile(PREFIX_START + r"rubygems_[a-f0-9]{48}(?![A-Za-z0-9])")),
    Rule(
        "dynatrace_token",
        ("dt0c01.",),
        re.compile(PREFIX_START + r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}(?![A-Za-z0-9])"),
    ),
    Rule(
        "alibaba_access_key_id",
        ("ltai",),
        re.compile(WORD_START + r"LTAI[A-Za-z0-9]{12,20}(?![A-Za-z0-9])"),
    ),
    Rule("artifactory_key", ("akcp",), re.compile(WORD_START + r"AKCp[A-Za-z0-9]{60,}+")),
    # --- found by a fixed part inside them (``offset``: where the match starts before it) ------------
    # Terraform Cloud / Enterprise API tokens: 14 characters, ".atlasv1.", 60-70 more
    Rule(
        "terraform_token",
        (".atlasv1.",),
        re.compile(TOKEN_START + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}+"),
        offset=14,
    ),
    # Firebase Cloud Messaging legacy server keys: "AAAA" + 7, ":APA91b", 134 more
    Rule(
        "firebase_server_key",
        (":apa91b",),
        re.compile(TOKEN_START + r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}+"),
        offset=11,
    ),
    # Azure AD (Entra) client secrets: 3 characters, a digit, "Q~", 31-34 more ("abc8Q~...")
    Rule(
        "azure_client_secret",
        ("q~",),
        re.compile(_AZURE_START + r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
        offset=4,
    ),
    # Microsoft's identifiable keys (Azure DevOps PATs, and others): 52 characters, then "JQQJ9"
    Rule(
        "azure_key",
        ("jqqj9",),
        re.compile(
            TOKEN_START + r"[A-Za-z0-9]{52}JQQJ9[9DH][A-Za-z0-9][A-L][A-Za-z0-9]{16}[A-Za-z][A-Za-z0-9]{7}"
            r"(?:[A-Za-z0-9]{2}==)?(?![A-Za-z0-9])"
        ),
        offset=52,
    ),
    # Mailchimp: 32 hex digits, then the data center ("-us12")
    Rule(
        "mailchimp_key",
        ("-us",),
        re.compile(TOKEN_START + r"[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9])"),
        offset=32,
    ),
    Rule(
        "databricks_token",
        ("dapi",),
        re.compile(PREFIX_START + r"dapi[a-f0-9]{32}(?:-[0-9]{1,2})?(?![A-Za-z0-9])"),
    ),
    # Incoming-webhook URLs are bearer credentials: whoever has one can post as the integration.
    # The host and path stay readable, the secret part goes.
    # Discord's may name an API version ("/api/v10/webhooks/"); Microsoft Teams' incoming webhooks
    # ("<tenant>.webhook.office.com/webhookb2/<ids>/IncomingWebhook/<secret>/<id>").
    Rule(
        "webhook_url",
        ("hooks.slack.com/", "discord.com/api/", "discordapp.com/api/", "webhook.office.com/webhookb2/"),
        re.compile(
            r"(?P<prefix>(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"|(?:discord|discordapp)\.com/api/(?:v[0-9]{1,2}/)?webhooks/|webhook\.office\.com/webhookb2/))"
            r"(?=[A-Za-z0-9/_@-]{20})[A-Za-z0-9/_@-]++"
        ),
        keep_prefix,
    ),
)
