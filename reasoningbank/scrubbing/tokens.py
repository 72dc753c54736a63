"""Tokens with a prefix of their own: ours ("rb_", "rbo_", "rbr_") and the well-known formats of the
services an agent's tools talk to ("sk-ant-", "ghp_", "xoxb-", "AKIA", JWTs, webhook URLs)."""

from __future__ import annotations

import re

from reasoningbank.scrubbing.primitives import OWN_START, PREFIX_START, TOKEN_START, WORD_START, Rule, keep_prefix

# ReasoningBank's own credentials: API tokens ("rb_"), OAuth access ("rbo_") and refresh ("rbr_")
# tokens. Their raw values are handed back (``ScrubResult.own_tokens``) so that the service that
# scrubbed a text can revoke them: a token that reached the bank has leaked (docs/security/secret-scrubbing.md).
OWN_TOKEN_KINDS = ("reasoningbank_oauth_token", "reasoningbank_token")

TOKEN_RULES: tuple[Rule, ...] = (
    # Our own tokens first, so that "Authorization: Bearer rbo_..." or "password=rb_..." reports
    # (and hands back for revocation) our token rather than a generic header or assignment.
    # API tokens: "rb_" + secrets.token_urlsafe(32); OAuth access and refresh tokens: "rbo_" and
    # "rbr_" + the same (accounts/oauth.py). Requiring both an upper- and a lower-case letter
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
    Rule("atlassian_token", ("atatt3",), re.compile(PREFIX_START + r"ATATT3[A-Za-z0-9_=-]{60,}+")),
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
    Rule(
        "databricks_token",
        ("dapi",),
        re.compile(PREFIX_START + r"dapi[a-f0-9]{32}(?:-[0-9]{1,2})?(?![A-Za-z0-9])"),
    ),
    # Incoming-webhook URLs are bearer credentials: whoever has one can post as the integration.
    # The host and path stay readable, the secret part goes.
    Rule(
        "webhook_url",
        ("hooks.slack.com/", "discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
        re.compile(
            r"(?P<prefix>(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"|(?:discord|discordapp)\.com/api/webhooks/))"
            r"(?=[A-Za-z0-9/_-]{20})[A-Za-z0-9/_-]++"
        ),
        keep_prefix,
    ),
)
