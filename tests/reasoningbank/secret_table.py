"""The secret-format table: credentials as they show up in agent traces and memories, and
look-alikes that must come through untouched (docs/security/secret-scrubbing.md).

Data only. ``tests/reasoningbank/test_secret_table.py`` checks the scrubber against every row, and
``bench/scrubbing.py`` scores the scrubber and the detect-secrets library on the same rows (the
figures in the doc).

A ``Secret`` row is ``before + secret + after``: the scrubber must turn it into
``before + [REDACTED:<kind>] + after`` exactly (the secret gone, nothing around it mangled). The
secret values are fake but have the real shapes and random-looking bodies, generated from a fixed
seed so that the file holds no literal credential (secret scanners on this repository stay quiet)
and every run sees the same values.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

_rng = random.Random(20260611)

ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(alphabet: str, size: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(size))


def mixed(alphabet: str, size: int) -> str:
    """Random, with at least one upper-case letter, lower-case letter and digit (as real tokens of
    that length have, almost always)."""
    while True:
        value = rand(alphabet, size)
        if any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value):
            return value


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@dataclass(frozen=True)
class Secret:
    name: str
    before: str
    secret: str
    after: str
    kind: str

    @property
    def text(self) -> str:
        return self.before + self.secret + self.after

    @property
    def expected(self) -> str:
        return f"{self.before}[REDACTED:{self.kind}]{self.after}"


@dataclass(frozen=True)
class LookAlike:
    name: str
    text: str


AWS_SECRET = mixed(B64, 40)
PEM_BODY = "\n".join(rand(B64, 64) for _ in range(4))
OWN = mixed(URLSAFE, 43)  # secrets.token_urlsafe(32): 43 characters
PUTTY = (
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20260101\nPublic-Lines: 2\n"
    f"AAAAC3NzaC1lZDI1NTE5AAAAI{rand(B64, 39)}\n{rand(B64, 8)}\nPrivate-Lines: 1\n{rand(B64, 44)}\n"
    f"Private-MAC: {rand(HEX, 64)}"
)
JWT_HEADER = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9"
JWT = f"{JWT_HEADER}.eyJzdWIiOiJzZXJ2aWNlLWFjY291bnQiLCJleHAiOjE3ODAwMDAwMDB9.{rand(URLSAFE, 86)}"
UNSIGNED_JWT = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJvd25lciJ9."
TWILIO_SID = "AC" + rand(HEX, 32)

SECRETS: list[Secret] = [
    # --- our own tokens ---------------------------------------------------------------------------
    Secret("reasoningbank api token", "RB_TOKEN=", "rb_" + OWN, "", "reasoningbank_token"),
    Secret("reasoningbank oauth access token in prose", "the agent used ", "rbo_" + mixed(URLSAFE, 43),
           " to write", "reasoningbank_oauth_token"),
    Secret("reasoningbank oauth access token in a header", "Authorization: Bearer ", "rbo_" + mixed(URLSAFE, 43), "",
           "reasoningbank_oauth_token"),
    Secret("reasoningbank oauth refresh token", '{"refresh_token": "', "rbr_" + mixed(URLSAFE, 43), '"}',
           "reasoningbank_oauth_token"),
    # --- cloud providers ------------------------------------------------------------------------------
    Secret("aws access key id", "aws_access_key_id = ", "AKIA" + rand(UPPER_ALNUM, 16), "", "aws_access_key_id"),
    Secret("aws temporary key id", "export AWS_ACCESS_KEY_ID=", "ASIA" + rand(UPPER_ALNUM, 16), "",
           "aws_access_key_id"),
    Secret("aws secret access key", "aws_secret_access_key = ", AWS_SECRET, "\n", "aws_secret_access_key"),
    Secret("aws secret key of 39 characters", "AWS_SECRET_ACCESS_KEY=", mixed(B64, 39), "", "aws_secret_access_key"),
    Secret("aws secret key of 44 characters", "aws_secret_access_key: ", mixed(B64, 44), "", "aws_secret_access_key"),
    Secret("aws SecretAccessKey in sts json", '  "SecretAccessKey": "', mixed(B64, 40), '",', "aws_secret_access_key"),
    Secret("aws SessionToken in sts json", '  "SessionToken": "', "IQoJb3JpZ2luX2VjE" + mixed(B64, 300), '",',
           "secret_assignment"),
    Secret("aws secret key in prose", "The AWS secret is ", mixed(B64, 40), " so keep it safe",
           "high_entropy_secret"),
    Secret("aws secret key in prose after the id", "key [REDACTED:aws_access_key_id] with ", mixed(B64, 40),
           " works", "high_entropy_secret"),
    Secret("signing key in an env file", "SIGNING_KEY=", mixed(B64, 43) + "=", "", "high_entropy_secret"),
    Secret("google api key", "https://maps.googleapis.com/maps/api/geocode/json?key=", "AIza" + rand(URLSAFE, 35),
           "", "google_api_key"),
    Secret("google oauth client secret", "client secret ", "GOCSPX-" + mixed(URLSAFE, 28), " from the console",
           "google_oauth_secret"),
    Secret("google oauth access token", "gcloud printed ", "ya29." + mixed(URLSAFE, 150), "",
           "google_oauth_token"),
    Secret("google oauth refresh token", "stored ", "1//0" + mixed(URLSAFE, 99), " in the cache",
           "google_oauth_token"),
    Secret("gcp service account key id", '  "private_key_id": "', rand(HEX, 40), '",', "secret_assignment"),
    Secret("azure storage account key", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=",
           mixed(B64, 86) + "==", ";EndpointSuffix=core.windows.net", "secret_assignment"),
    Secret("azure service bus key",
           "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=",
           mixed(B64, 43) + "=", "", "secret_assignment"),
    Secret("digitalocean token", "DIGITALOCEAN_ACCESS_TOKEN=", "dop_v1_" + rand(HEX, 64), "",
           "digitalocean_token"),
    Secret("databricks token", "DATABRICKS_TOKEN=", "dapi" + rand(HEX, 32), "", "databricks_token"),
    Secret("supabase token", "supabase login --token ", "sbp_" + rand(HEX, 40), "", "supabase_token"),
    Secret("pulumi token", "PULUMI_ACCESS_TOKEN=", "pul-" + rand(HEX, 40), "", "pulumi_token"),
    Secret("tailscale auth key", "tailscale up --authkey ", "tskey-auth-" + mixed(ALNUM, 12) + "-" + mixed(ALNUM, 33),
           "", "tailscale_key"),
    Secret("vault token", "VAULT_TOKEN=", "hvs." + mixed(URLSAFE, 90), "", "vault_token"),
    Secret("doppler service token", "DOPPLER_TOKEN=", "dp.st.prd." + mixed(ALNUM, 43), "", "doppler_token"),
    # --- code hosting and packages ---------------------------------------------------------------------------
    Secret("github classic token", "git remote set-url origin https://", "ghp_" + mixed(ALNUM, 36),
           "@github.com/o/r", "github_token"),
    Secret("github oauth token", "gh auth token printed ", "gho_" + mixed(ALNUM, 36), "", "github_token"),
    Secret("github token pasted into an id", "session run-", "ghp_" + mixed(ALNUM, 36), " failed", "github_token"),
    Secret("github app installation token", "x-access-token:", "ghs_" + mixed(ALNUM, 36), "", "github_token"),
    Secret("github refresh token", "refresh with ", "ghr_" + mixed(ALNUM, 76), "", "github_token"),
    Secret("github fine-grained token", "GH_TOKEN=", "github_pat_11" + mixed(ALNUM, 20) + "_" + mixed(ALNUM, 59), "",
           "github_token"),
    Secret("gitlab personal token", "GITLAB_TOKEN=", "glpat-" + mixed(URLSAFE, 20), "", "gitlab_token"),
    Secret("gitlab runner token", "--token ", "glrt-" + mixed(URLSAFE, 20), " registered", "gitlab_token"),
    Secret("gitlab deploy token", "deploy with ", "gldt-" + mixed(URLSAFE, 20), "", "gitlab_token"),
    Secret("npm token", "//registry.npmjs.org/:_authToken=", "npm_" + mixed(ALNUM, 36), "", "npm_token"),
    Secret("npmrc basic auth", "_auth=", b64(b"deploy:" + rand(ALNUM, 16).encode()), "", "registry_auth"),
    Secret("pypi token", "password = ", "pypi-AgEIcHlwaS5vcmc" + mixed(URLSAFE, 70), "", "pypi_token"),
    Secret("docker hub token", "echo ", "dckr_pat_" + mixed(URLSAFE, 27), " | docker login -u bob --password-stdin",
           "docker_token"),
    Secret("docker config auth", '{"auths": {"https://index.docker.io/v1/": {"auth": "',
           b64(b"bob:" + rand(ALNUM, 14).encode()), '"}}}', "registry_auth"),
    Secret("docker config auth in an escaped trace", '{\\"auths\\": {\\"ghcr.io\\": {\\"auth\\": \\"',
           b64(b"bob:ghp_" + rand(ALNUM, 36).encode()), '\\"}}}', "registry_auth"),
    Secret("atlassian api token", "JIRA_API_TOKEN=", "ATATT3xFfGF0" + mixed(URLSAFE, 170) + "=" + rand(HEX, 8), "",
           "atlassian_token"),
    Secret("linear api key", "LINEAR_API_KEY=", "lin_api_" + mixed(ALNUM, 40), "", "linear_key"),
    Secret("notion integration token", "NOTION_TOKEN=", "ntn_" + mixed(ALNUM, 46), "", "notion_token"),
    Secret("notion legacy token", "Notion token ", "secret_" + mixed(ALNUM, 43), " expired", "notion_token"),
    Secret("sentry org token", "SENTRY_AUTH_TOKEN=", "sntrys_" + mixed(URLSAFE, 120), "", "sentry_token"),
    Secret("postman api key", "x-api-key: ", "PMAK-" + rand(HEX, 24) + "-" + rand(HEX, 34), "", "postman_key"),
    Secret("new relic user key", "NEW_RELIC_API_KEY=", "NRAK-" + rand(UPPER_ALNUM, 27), "", "newrelic_key"),
    Secret("grafana service account token", "GRAFANA_TOKEN=", "glsa_" + mixed(ALNUM, 32) + "_" + rand(HEX, 8), "",
           "grafana_token"),
    # --- AI providers ------------------------------------------------------------------------------------------
    Secret("openai key", "OPENAI_API_KEY=", "sk-" + mixed(ALNUM, 48), "", "openai_key"),
    Secret("openai project key", 'client = OpenAI(api_key="', "sk-proj-" + mixed(URLSAFE, 156), '")', "openai_key"),
    Secret("openai service account key", "key: ", "sk-svcacct-" + mixed(URLSAFE, 156), "", "openai_key"),
    Secret("anthropic key", "ANTHROPIC_API_KEY=", "sk-ant-api03-" + mixed(URLSAFE, 95) + "AA", "", "anthropic_key"),
    Secret("anthropic admin key", "x-api-key: ", "sk-ant-admin01-" + mixed(URLSAFE, 95) + "AA", "", "anthropic_key"),
    Secret("hugging face token", "HF_TOKEN=", "hf_" + mixed(ALNUM, 34), "", "huggingface_token"),
    Secret("groq key", "GROQ_API_KEY=", "gsk_" + mixed(ALNUM, 52), "", "groq_key"),
    Secret("xai key", "export XAI_API_KEY=", "xai-" + mixed(ALNUM, 80), "", "xai_key"),
    Secret("perplexity key", "PPLX ", "pplx-" + mixed(ALNUM, 48), "", "perplexity_key"),
    Secret("replicate token", "REPLICATE_API_TOKEN=", "r8_" + mixed(ALNUM, 37), "", "replicate_token"),
    # --- messaging and payments -------------------------------------------------------------------------------
    Secret("slack bot token", "SLACK_BOT_TOKEN=", "xoxb-1234567890-0987654321-" + mixed(ALNUM, 24), "", "slack_token"),
    Secret("slack user token", "token ", "xoxp-1234567890-1234567890-1234567890-" + rand(HEX, 32), " revoked",
           "slack_token"),
    Secret("slack refresh token", "refreshed with ", "xoxe-1-" + mixed(URLSAFE.replace("_", ""), 140), "",
           "slack_token"),
    Secret("slack rotated access token", "new token ", "xoxe.xoxp-1-" + mixed(URLSAFE.replace("_", ""), 140), "",
           "slack_token"),
    Secret("slack app-level token", "SLACK_APP_TOKEN=", "xapp-1-A0123456789-1234567890123-" + rand(HEX, 64), "",
           "slack_token"),
    Secret("slack webhook", "POST https://hooks.slack.com/services/", "T01ABCDEF/B02GHIJKL/" + mixed(ALNUM, 24), "",
           "webhook_url"),
    Secret("discord webhook", "https://discord.com/api/webhooks/", "123456789012345678/" + mixed(URLSAFE, 68), "",
           "webhook_url"),
    Secret("telegram bot token", "bot ", "1234567890:AA" + mixed(URLSAFE, 33), " answers", "telegram_bot_token"),
    Secret("telegram bot api url", "curl https://api.telegram.org/bot", "987654321:AAH" + mixed(URLSAFE, 32),
           "/sendMessage", "telegram_bot_token"),
    Secret("twilio auth token after the account sid", f'client = Client("{TWILIO_SID}", "', rand(HEX, 32), '")',
           "twilio_auth_token"),
    Secret("twilio auth token in prose", "the twilio auth token is ", rand(HEX, 32), "", "twilio_auth_token"),
    Secret("twilio api key secret", "twilio api secret: ", mixed(ALNUM, 32), "", "twilio_auth_token"),
    Secret("sendgrid key", "SENDGRID_API_KEY=", "SG." + mixed(URLSAFE, 22) + "." + mixed(URLSAFE, 43), "",
           "sendgrid_key"),
    Secret("mailgun key", "api:", "key-" + rand(LOWER_ALNUM, 31) + "7", "", "mailgun_key"),
    Secret("stripe live secret key", "stripe.api_key = ", "sk_live_" + mixed(ALNUM, 99), "", "stripe_key"),
    Secret("stripe restricted key", "STRIPE_KEY=", "rk_live_" + mixed(ALNUM, 99), "", "stripe_key"),
    Secret("stripe test key", "Stripe::api_key = '", "sk_test_" + mixed(ALNUM, 24), "'", "stripe_key"),
    Secret("square access token", "SQUARE_TOKEN=", "sq0atp-" + mixed(URLSAFE, 22), "", "square_token"),
    Secret("shopify token", "X-Shopify-Access-Token: ", "shpat_" + rand(HEX, 32), "", "shopify_token"),
    Secret("mapbox secret token", "MAPBOX_TOKEN=",
           "sk.eyJ1IjoiYWNtZSIsImEiOiJjbGIxMjM0NTYwMDAwM2xxeHB6NTZhYmMifQ." + mixed(URLSAFE, 22), "",
           "mapbox_token"),
    # --- keys, tokens and headers ---------------------------------------------------------------------------
    Secret("jwt", "id_token: ", JWT, "", "jwt"),
    Secret("unsigned jwt", "forged ", UNSIGNED_JWT, " accepted", "jwt"),
    Secret("kubeconfig user token", "    token: ", JWT, "\n", "jwt"),
    Secret("rsa private key", "cat id_rsa\n",
           f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----", "\ndone", "private_key"),
    Secret("openssh private key", "",
           f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----", "", "private_key"),
    Secret("ec private key in json", '{"key": "',
           f"-----BEGIN EC PRIVATE KEY-----\\n{rand(B64, 64)}\\n-----END EC PRIVATE KEY-----", '"}', "private_key"),
    Secret("pgp private key block", "",
           f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{PEM_BODY}\n-----END PGP PRIVATE KEY BLOCK-----", "",
           "private_key"),
    Secret("putty private key", "saved deploy.ppk:\n", PUTTY, "\nthen loaded it", "private_key"),
    Secret("kubeconfig client-key-data", "    client-key-data: ",
           b64(b"-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY.encode() + b"\n-----END RSA PRIVATE KEY-----\n"), "\n",
           "private_key"),
    Secret("age secret key", "# ", "AGE-SECRET-KEY-1" + rand(UPPER_ALNUM, 58), "", "age_secret_key"),
    Secret("bearer header", "curl -H 'Authorization: Bearer ", mixed(ALNUM, 40), "' https://api.example.com",
           "authorization"),
    Secret("basic auth header", "Authorization: Basic ", b64(b"bob:" + rand(ALNUM, 12).encode()), "",
           "authorization"),
    # --- passwords --------------------------------------------------------------------------------------------
    Secret("database url", "DATABASE_URL=postgres://app:", mixed(ALNUM, 16), "@db.internal:5432/app", "url_password"),
    Secret("url password starting with $", "postgres://app:", "$ecr3t" + mixed(ALNUM, 6), "@db:5432/app",
           "url_password"),
    Secret("url password starting with *", "mysql://root:", "*Pw" + mixed(ALNUM, 8) + "*", "@127.0.0.1/db",
           "url_password"),
    Secret("url-encoded password", "amqp://guest:", "%24ecr3t%21" + mixed(ALNUM, 6), "@rabbit:5672/", "url_password"),
    Secret("PASSWORD= starting with $", "DB_PASSWORD=", "$ecr3t" + mixed(ALNUM, 6), "", "secret_assignment"),
    Secret("PASSWORD= starting with *", "POSTGRES_PASSWORD=", "*" + mixed(ALNUM, 10), "", "secret_assignment"),
    Secret("PASSWORD= starting with %", "MYSQL_PASSWORD=", "%" + mixed(ALNUM, 10), "", "secret_assignment"),
    Secret("json password starting with $", '{"password": "', "$" + mixed(ALNUM, 11), '"}', "secret_assignment"),
    Secret("json password starting with *", '{"user": "app", "password": "', "*" + mixed(ALNUM, 11) + "!", '"}',
           "secret_assignment"),
    Secret("json password starting with %", '{"db_password": "', "%" + mixed(ALNUM, 11), '"}', "secret_assignment"),
    Secret("export API_TOKEN", "export API_TOKEN=", rand(HEX, 32), "", "secret_assignment"),
    Secret("token= in a query", "GET /download?token=", mixed(ALNUM, 16), "&file=report.pdf", "secret_assignment"),
    Secret("DB_PASSWORD: yaml", "environment:\n  DB_PASSWORD: ", mixed(ALNUM, 10), "\n", "secret_assignment"),
    Secret("PGPASSWORD=", "PGPASSWORD=", mixed(ALNUM, 10), " psql -h db -U app", "secret_assignment"),
    Secret("django secret key", "SECRET_KEY = '", "django-insecure-" + mixed(ALNUM, 40), "'", "secret_assignment"),
    Secret("client_secret", "client_secret=", rand(HEX, 24), "", "secret_assignment"),
    Secret("named cloudflare token", "CLOUDFLARE_API_TOKEN=", mixed(URLSAFE, 40), "", "secret_assignment"),
    Secret("passphrase", "passphrase: ", mixed(ALNUM, 14), "\n", "secret_assignment"),
    Secret(".netrc", "machine api.heroku.com\n  login bob@example.com\n  password ", mixed(ALNUM, 20), "",
           "secret_assignment"),
    Secret("mysql -p", "mysql -h db -u root -p", mixed(ALNUM, 10), " app_db < dump.sql", "cli_password"),
    Secret("sshpass -p", "sshpass -p ", mixed(ALNUM, 10), " ssh deploy@web1", "cli_password"),
    Secret("redis-cli -a", "redis-cli -h cache -a ", mixed(ALNUM, 12), " ping", "cli_password"),
    Secret("curl -u", "curl -u bob:", mixed(ALNUM, 12), " https://api.example.com/x", "cli_password"),
    Secret("--password flag", "psql --password ", mixed(ALNUM, 10), " -c 'select 1'", "secret_assignment"),
]  # fmt: skip


LOOK_ALIKES: list[LookAlike] = [
    # hashes, ids and digests
    LookAlike("git sha", "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the key rotation"),
    LookAlike("short git shas", "git log --oneline: 1b25311 minilm tests, 894e2a0 token selectors, e7a3dab secret"),
    LookAlike("uuid", "request 123e4567-e89b-12d3-a456-426614174000 failed: the api key was missing"),
    LookAlike("uuid as an idempotency key", "Idempotency-Key: 9b2f4c3e-8d1a-4e5b-9c7d-2a6f0e1b3c4d"),
    LookAlike("sha256 hex digest",
              "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 secret.txt"),
    LookAlike("md5 digest", "md5 d41d8cd98f00b204e9800998ecf8427e of the key file"),
    LookAlike("docker image digest", "image: ghcr.io/acme/api@sha256:" + "a3f1c2b4d5e6f708" * 4),
    LookAlike("subresource integrity",
              'integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC"'),
    LookAlike("npm lockfile integrity", '"integrity": "sha512-' + b64(bytes(range(64))) + '"'),
    LookAlike("ssh key fingerprint",
              "The key fingerprint is SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s bob@laptop"),
    LookAlike("ssh public key",
              "add the public key ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBpZ3VrZXlzX2FyZV9wdWJsaWNfa2V5cw bob@laptop"),
    LookAlike("go.sum line", "github.com/zalando/go-keyring v0.2.3 h1:v9CUJmo4hmSMZHH6eyqeoEbJ3b27Lp4kSbLWxXU7kDk="),
    LookAlike("cargo checksum", 'checksum = "' + "5e0f41c4d9a2b7e8" * 4 + '" # key crate'),
    LookAlike("aws arn", "role arn:aws:iam::123456789012:role/DeployKeyRotation assumed"),
    LookAlike("aws example placeholder id in prose", "the access key id looks like AKIA followed by 16 characters"),
    LookAlike("twilio account sid alone", "Account SID AC" + "0123456789abcdef" * 2 + " (not a secret)"),
    # placeholders and markers
    LookAlike("YOUR_API_KEY", "OPENAI_API_KEY=YOUR_API_KEY"),
    LookAlike("quoted YOUR_API_KEY", 'client = OpenAI(api_key="YOUR_API_KEY")'),
    LookAlike("your-token-here", 'headers = {"Authorization": "Bearer your-token-here"}'),
    LookAlike("angle-bracket placeholder", "AccountKey=<your-storage-account-key>"),
    LookAlike("redaction marker",
              "the key [REDACTED:openai_key] was rotated; token [REDACTED:reasoningbank_oauth_token]"),
    LookAlike("env reference", "DB_PASSWORD=${DB_PASSWORD}"),
    LookAlike("bare env reference", "PASSWORD=$DB_PASSWORD"),
    LookAlike("lower-case variable", 'password="$password"'),
    LookAlike("command substitution", "export PGPASSWORD=$(cat /run/secrets/db_password)"),
    LookAlike("url with an env reference", "postgres://app:${PGPASSWORD}@db/app"),
    LookAlike("printf placeholder", '{"password": "%s"}'),
    LookAlike("python format placeholder", "'password': '%(password)s',"),
    LookAlike("windows env reference", "set DB_PASSWORD=%DB_PASSWORD%"),
    LookAlike("masked value", "password=********"),
    LookAlike("bearer placeholder", "Authorization: Bearer $TOKEN"),
    # code
    LookAlike("environment lookup", "password = os.environ['DB_PASSWORD']"),
    LookAlike("settings lookup", "api_key = settings.OPENAI_API_KEY"),
    LookAlike("header lookup", "token = request.headers.get('Authorization')"),
    LookAlike("signature", "def rotate_api_key(self, key_id: str, *, secret: bytes | None = None) -> str:"),
    LookAlike("camelCase identifier near key", "the cache key is getUserProfileById2023 for each call"),
    LookAlike("long identifier near secret", "secret rotation lives in handleUserAuthenticationRequestCallback1"),
    LookAlike("java class path near token", "the token parser is org/apache/commons/lang3/StringUtils2Helper"),
    LookAlike("kwargs", "token = *args"),
    LookAlike("f-string url", 'dsn = f"postgres://{user}:{password}@{host}/app"'),
    LookAlike("rb_ identifiers", "rb_connection_pool_manager = RB_MAX_CONNECTIONS_PER_HOST"),
    LookAlike("our prefixes in prose", "tokens start with rb_, rbo_ or rbr_; see docs/security"),
    LookAlike("kebab-case words", "sk-learn-the-basics-of-the-library-here and key-value-store-notes"),
    LookAlike("python code", "for i in range(10):\n    total += i  # accumulate\nprint(f'{total=}')"),
    LookAlike("sql", "SELECT id, title FROM memories WHERE confidence > 0.5 ORDER BY created_at DESC;"),
    # data and prose
    LookAlike("base64 of text near key", "the cache key is " + b64(b"user_profile_12345 hello")),
    LookAlike("base64 json near token", "token payload eyJmb28iOiJiYXIiLCJ1c2VyIjoiYm9iIn0 decoded fine"),
    LookAlike("base64 png",
              "base64 of a PNG: iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"),
    LookAlike("kubeconfig certificate data",
              "    certificate-authority-data: " + b64(b"-----BEGIN CERTIFICATE-----\n" + PEM_BODY.encode())),
    LookAlike("public key pem",
              "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----"),
    LookAlike("prose about secrets", "Rotate the AWS secret key every 90 days and never paste a token into a chat."),
    LookAlike("prose about tokens", "token: the unit of text an LLM reads; max_tokens=1024"),
    LookAlike("mysql prompt", "mysql -u root -p app_db"),
    LookAlike("curl without password", "curl -u bob https://api.example.com/x"),
    LookAlike("version strings", "python:3.11-slim-bookworm, node v20.11.1, key-bindings 2.4.0-rc.1+build.5"),
    LookAlike("email and url", "mail alice@example.com or open https://example.com/docs?page=2#api-keys"),
    LookAlike("timestamp with colons", "2026-06-11T10:30:00Z 20260611:ARM64 build finished"),
    LookAlike("login page prose", "machine learning models need a login page and a password field"),
]  # fmt: skip


# --- the second red-team run's families and their neighbours -------------------------------------------
# Appended after the first table so that the values above (drawn from the same seed) stay as they were.


def discord_bot_token() -> str:
    bot_id = str(_rng.randrange(10**18, 10**19))  # a Discord id of 19 digits
    first = base64.urlsafe_b64encode(bot_id.encode()).decode().rstrip("=")
    return f"{first}.{mixed(URLSAFE, 6)}.{mixed(URLSAFE, 38)}"


def uuid4() -> str:
    return "-".join(rand(HEX, n) for n in (8, 4, 4, 4, 12))


def azure_client_secret() -> str:
    return rand(ALNUM, 3) + "8Q~" + mixed(ALNUM + "_~.-", 33) + rand(ALNUM, 1)


def azure_identifiable_key() -> str:
    return rand(ALNUM, 52) + "JQQJ99" + rand(ALNUM, 1) + "C" + rand(ALNUM, 16) + "A" + rand(ALNUM, 7)


def url_encoded_signature() -> str:
    """base64 of a 32-byte HMAC, URL-encoded as Azure prints it ("%2B", "%2F", "%3D")."""
    return (
        b64(bytes(_rng.randrange(256) for _ in range(32))).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    )


SPLIT_HEAD, SPLIT_TAIL = mixed(ALNUM, 18), mixed(ALNUM, 18)

SECRETS += [
    # ours and the formats that share its prefix
    Secret("webhook signing secret", "RB_WEBHOOK_SECRET=", "whsec_" + mixed(URLSAFE, 43), "", "webhook_signing_secret"),
    Secret("stripe webhook secret in prose", "verify the events with ", "whsec_" + mixed(ALNUM, 32), " from Stripe",
           "webhook_signing_secret"),
    # Twilio, Bitbucket and Atlassian
    Secret("twilio api key sid", "TWILIO_API_KEY=", "SK" + rand(HEX, 32), "", "twilio_api_key"),
    Secret("bitbucket app password", "git clone https://bob:", "ATBB" + mixed(ALNUM, 32),
           "@bitbucket.org/acme/app.git", "bitbucket_app_password"),
    Secret("bitbucket access token", "BITBUCKET_TOKEN=", "ATCTT3xFfGN0" + mixed(URLSAFE, 170) + "=" + rand(HEX, 8),
           "", "atlassian_token"),
    # Azure and the signed URLs of every cloud
    Secret("azure client secret", "AZURE_CLIENT_SECRET=", azure_client_secret(), "", "azure_client_secret"),
    Secret("azure client secret in json", '{"clientSecret": "', azure_client_secret(), '"}', "azure_client_secret"),
    Secret("azure devops personal access token", "AZURE_DEVOPS_EXT_PAT=", azure_identifiable_key(), "", "azure_key"),
    Secret("azure sas url", "https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
           "&se=2026-07-01T00:00:00Z&spr=https&sig=", url_encoded_signature(), "", "signed_url_signature"),
    Secret("azure service bus sas token", "SharedAccessSignature sr=acme.servicebus.windows.net&sig=",
           url_encoded_signature(), "&se=1780000000&skn=RootManageSharedAccessKey", "signed_url_signature"),
    Secret("s3 presigned url", "https://acme.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
           "&X-Amz-Date=20260611T103000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=",
           rand(HEX, 64), "", "signed_url_signature"),
    Secret("gcs signed url", "https://storage.googleapis.com/acme/report.pdf?X-Goog-Algorithm=GOOG4-RSA-SHA256"
           "&X-Goog-Expires=900&X-Goog-Signature=", rand(HEX, 512), "", "signed_url_signature"),
    # Okta, Firebase, Terraform Cloud, Discord, Mailchimp
    Secret("okta api token", "Authorization: SSWS ", "00" + mixed(URLSAFE, 40), "", "okta_token"),
    Secret("okta api token in curl", 'curl -H "Authorization: SSWS ', "00" + mixed(URLSAFE, 40),
           '" https://acme.okta.com/api/v1/users', "okta_token"),
    Secret("firebase server key", "FCM_SERVER_KEY=", "AAAA" + rand(URLSAFE, 7) + ":APA91b" + mixed(URLSAFE, 134), "",
           "firebase_server_key"),
    Secret("firebase server key in a header", "Authorization: key=",
           "AAAA" + rand(URLSAFE, 7) + ":APA91b" + mixed(URLSAFE, 134), "", "firebase_server_key"),
    Secret("terraform cloud token", '{"credentials": {"app.terraform.io": {"token": "',
           rand(ALNUM, 14) + ".atlasv1." + mixed(URLSAFE, 67), '"}}}', "terraform_token"),
    Secret("terraform token in the environment", "TF_TOKEN_app_terraform_io=",
           rand(ALNUM, 14) + ".atlasv1." + mixed(URLSAFE, 67), "", "terraform_token"),
    Secret("discord bot token", 'client.run("', discord_bot_token(), '")', "discord_bot_token"),
    Secret("discord bot authorization header", "Authorization: Bot ", discord_bot_token(), "", "discord_bot_token"),
    Secret("discord webhook with an api version", "https://discord.com/api/v10/webhooks/",
           "123456789012345678/" + mixed(URLSAFE, 68), "", "webhook_url"),
    Secret("microsoft teams webhook", "https://acme.webhook.office.com/webhookb2/",
           f"{uuid4()}@{uuid4()}/IncomingWebhook/{rand(HEX, 32)}/{uuid4()}", "", "webhook_url"),
    Secret("mailchimp key", "MAILCHIMP_API_KEY=", rand(HEX, 32) + "-us12", "", "mailchimp_key"),
    Secret("mailchimp key in prose", "the mailchimp key ", rand(HEX, 32) + "-us6", " expired", "mailchimp_key"),
    # passwords on a command line and in prose
    Secret("docker login -p", "docker login -u bob -p ", mixed(ALNUM, 14), " registry.example.com", "cli_password"),
    Secret("helm registry login -p", "helm registry login ghcr.io -u bob -p ", mixed(ALNUM, 14), "",
           "cli_password"),
    Secret("password stated in prose", "the password is ", mixed(ALNUM, 9) + "!", "", "password_in_prose"),
    Secret("pw: in prose", "log in as admin, pw: ", mixed(ALNUM, 9) + "#", " then change it", "password_in_prose"),
    Secret("password of a named thing in prose", "the password for the staging db was changed to ",
           mixed(ALNUM, 12), ".", "password_in_prose"),
    Secret("quoted password in prose", 'the admin password is "', mixed(ALNUM, 10), '" for now', "password_in_prose"),
    # wrapped and split
    Secret("base64 of a github token", "echo ", b64(("ghp_" + mixed(ALNUM, 36)).encode()), " | base64 -d > ~/.token",
           "base64_encoded_secret"),
    Secret("base64 of an env file", "SECRETS_B64=",
           b64(f"AWS_ACCESS_KEY_ID=AKIA{rand(UPPER_ALNUM, 16)}\nAWS_SECRET_ACCESS_KEY={mixed(B64, 40)}".encode()),
           "", "base64_encoded_secret"),
    Secret("base64 of a database url in a kubernetes secret", "data:\n  DATABASE_URL: ",
           b64(("postgres://app:" + mixed(ALNUM, 16) + "@db:5432/app").encode()), "\n", "base64_encoded_secret"),
    Secret("token split by a zero-width space", "GH_TOKEN=", "ghp_" + SPLIT_HEAD + "\u200b" + SPLIT_TAIL, "",
           "github_token"),
    Secret("key split by a soft hyphen", "the key ", "sk-proj-" + mixed(ALNUM, 30) + "\u00ad" + mixed(ALNUM, 30),
           " works", "openai_key"),
    Secret("token split by a line continuation", "export GITHUB_TOKEN=",
           "ghp_" + mixed(ALNUM, 20) + "\\\n" + mixed(ALNUM, 16), "", "github_token"),
    # neighbours: more providers' prefixed tokens
    Secret("heroku api key", "HEROKU_API_KEY=", "HRKU-AA" + mixed(URLSAFE, 58), "", "heroku_key"),
    Secret("planetscale password", "PSCALE_PASSWORD=", "pscale_pw_" + mixed(URLSAFE, 43), "", "planetscale_token"),
    Secret("fly.io token", "FLY_API_TOKEN=", "fo1_" + mixed(URLSAFE, 43), "", "flyio_token"),
    Secret("1password service account token", "OP_SERVICE_ACCOUNT_TOKEN=", "ops_eyJ" + mixed(B64, 300), "",
           "onepassword_token"),
    Secret("sourcegraph token", "SRC_ACCESS_TOKEN=", "sgp_" + rand(HEX, 16) + "_" + rand(HEX, 40), "",
           "sourcegraph_token"),
    Secret("brevo key", "BREVO_API_KEY=", "xkeysib-" + rand(HEX, 64) + "-" + mixed(ALNUM, 16), "", "brevo_key"),
    Secret("rubygems token", ":rubygems_api_key: ", "rubygems_" + rand(HEX, 48), "", "rubygems_token"),
    Secret("dynatrace token", "DT_API_TOKEN=", "dt0c01." + rand(UPPER_ALNUM, 24) + "." + rand(UPPER_ALNUM, 64), "",
           "dynatrace_token"),
    Secret("alibaba access key id", "access key id ", "LTAI" + mixed(ALNUM, 20), " for oss", "alibaba_access_key_id"),
    Secret("artifactory api key", "X-JFrog-Art-Api: ", "AKCp" + mixed(ALNUM, 69), "", "artifactory_key"),
]  # fmt: skip

LOOK_ALIKES += [
    LookAlike("webhook secret hint", "the dashboard shows whsec_Ab3dE9… for this endpoint; rotate it there"),
    LookAlike("sku codes", "SKU12345 and SKUabcdef are in stock; the SK prefix is also Slovakia's"),
    LookAlike("twilio sid with one character too many", "log id SK" + "0123456789abcdef" * 2 + "x in the audit trail"),
    LookAlike("bitbucket prefix in prose", "Bitbucket app passwords start with ATBB and are shown once"),
    LookAlike("home paths and a short q~", "cd ~/src && ls x8Q~ -la; see ~/.config/app.toml"),
    LookAlike("azure client id", "AZURE_CLIENT_ID=123e4567-e89b-12d3-a456-426614174000"),
    LookAlike("short signature parameter", "GET /verify?sig=abc123&v=2 and pgp sig=verified"),
    LookAlike("signature placeholder", "https://acme.blob.core.windows.net/c/b?sv=2022-11-02&sig=${SAS_SIGNATURE}"),
    LookAlike("s3 url without a signature",
              "https://acme.s3.amazonaws.com/report.pdf?X-Amz-Expires=3600&X-Amz-SignedHeaders=host"),
    LookAlike("okta scheme in docs", "Okta tokens travel as Authorization: SSWS <token>, never as Bearer"),
    LookAlike("atlasv1 in prose", "Terraform Cloud tokens have .atlasv1. in the middle"),
    LookAlike("discord snowflake", "channel 123456789012345678 posted in guild 876543210987654321"),
    LookAlike("fcm device registration token",
              "device dJfzR3x8Q2eK7pLm4nVb9c:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx is registered for push"),
    LookAlike("dotted base64 that is no discord token",
              "TWFueSBoYW5kcyBtYWtlIGxp.ghijkl.abcdefghijklmnopqrstuvwxyz0123456789ABCD"),
    LookAlike("md5 before a file name", "d41d8cd98f00b204e9800998ecf8427e-users.csv and -us-east-1 buckets"),
    LookAlike("docker run ports", "docker run -p 8080:80 -p 5432:5432 -e POSTGRES_DB=app postgres:16"),
    LookAlike("docker login from stdin", "echo $REGISTRY_TOKEN | docker login -u bob --password-stdin ghcr.io"),
    LookAlike("docker login with a variable", 'docker login -u "$USER" -p "$REGISTRY_PASSWORD" ghcr.io'),
    LookAlike("password stored elsewhere", "the password is stored in Vault and rotated every 90 days"),
    LookAlike("password rules", "the password is 12-characters long, case-sensitive and hashed with argon2id"),
    LookAlike("password location", "the password for the db is in ~/.pgpass; pw: see the team vault"),
    LookAlike("password in code", "password = sha256(salt + raw)  # never store the raw pw: only its digest"),
    LookAlike("password as a setting", "the password is settings.DB_PASSWORD or the env var DB_PASSWORD_FILE"),
    LookAlike("base64 of a sentence", "note " + b64(b"Configure the cache before starting the server")),
    LookAlike("base64 of a placeholder config", "CONFIG_B64=" + b64(b"password=${DB_PASSWORD}\nhost=db")),
    LookAlike("base64 jpeg", "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAAMCAgMCAgMDAwMEAwMEBQgFBQQE"),
    LookAlike("base64 of random bytes", "nonce " + b64(bytes(range(200, 248)))),
    LookAlike("zero-width characters in prose", "zero\u200bwidth joiners stay\u200d here, and soft\u00adhyphens too"),
    LookAlike("line continuations in a script", "docker run \\\n  -e FOO=bar \\\n  -v data:/data \\\n  app:latest"),
    LookAlike("alibaba prefix in prose", "Alibaba key ids start with LTAI; ours is in the vault"),
]  # fmt: skip


# The formats an outside red-team run found surviving the scrubber (docs/security/secret-scrubbing.md):
# every entry path's regression test sends these.
RED_TEAM_NAMES = (
    "reasoningbank oauth access token in prose", "reasoningbank oauth refresh token", "kubeconfig client-key-data",
    "putty private key", "docker config auth", "url password starting with $", "url password starting with *",
    "url-encoded password", "PASSWORD= starting with $", "PASSWORD= starting with *", "PASSWORD= starting with %",
    "json password starting with $", "json password starting with *", "json password starting with %",
    "slack refresh token", "google oauth client secret", "telegram bot token",
    "twilio auth token after the account sid", "unsigned jwt", "aws secret key of 39 characters",
    "aws secret key of 44 characters", "aws secret key in prose",
    # the second run's (docs/security/secret-scrubbing.md#the-format-table-and-the-evaluation)
    "webhook signing secret", "twilio api key sid", "bitbucket app password", "azure client secret", "azure sas url",
    "okta api token", "firebase server key", "terraform cloud token", "discord bot token",
    "discord webhook with an api version", "mailchimp key", "docker login -p", "password stated in prose",
    "pw: in prose", "base64 of a github token", "token split by a line continuation",
    "token split by a zero-width space",
)  # fmt: skip
RED_TEAM = [row for row in SECRETS if row.name in RED_TEAM_NAMES]
assert len(RED_TEAM) == len(RED_TEAM_NAMES)


def red_team_text() -> str:
    """One text holding every red-team format, one per line, as a trace or a memory would."""
    return "\n".join(row.text for row in RED_TEAM)


def red_team_left(text: str) -> list[str]:
    """The red-team rows whose secret is still in ``text`` (empty when all were scrubbed)."""
    return [row.name for row in RED_TEAM if row.secret in text]


def red_team_chunks(limit: int) -> list[str]:
    """``red_team_text()`` cut at line ends into texts of at most ``limit`` characters (a comment or
    a note has a size limit)."""
    chunks: list[str] = []
    for row in RED_TEAM:
        if chunks and len(chunks[-1]) + 1 + len(row.text) <= limit:
            chunks[-1] += "\n" + row.text
        else:
            chunks.append(row.text)
    return chunks
