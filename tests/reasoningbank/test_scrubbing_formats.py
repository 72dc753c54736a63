"""The format table: common credential formats as they show up in traces and memories, each with the
exact scrubbed text, and ordinary text that must survive untouched
(docs/security/secret-scrubbing.md#the-format-table-and-the-evaluation).

The secrets are fake but have the real shapes; they are assembled from pieces so that secret
scanners on this repository do not flag the file itself.
"""

from __future__ import annotations

import pytest

from reasoningbank.scrubbing import SECRET_KINDS, ScrubResult, scrub_secrets

A40 = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789aBcD"
HEX = "0123456789abcdef" * 4  # 64 lower-case hex digits
B64 = "Zm9vYmFyYmF6cXV4" * 6  # base64-ish, 96 characters
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
R = "[REDACTED:{}]".format

# (format, text, scrubbed text, kind)
FORMATS: list[tuple[str, str, str, str]] = [
    ("aws access key id", "aws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE",
     "aws_access_key_id = " + R("aws_access_key_id"), "aws_access_key_id"),
    ("aws temporary key id", "export AWS_ACCESS_KEY_ID=ASIA" + "Y34FZKBOKMUTVV7A",
     "export AWS_ACCESS_KEY_ID=" + R("aws_access_key_id"), "aws_access_key_id"),
    ("aws secret access key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
     "aws_secret_access_key = " + R("aws_secret_access_key"), "aws_secret_access_key"),
    ("aws session token", "aws_session_token=IQoJb3JpZ2luX2VjEJr//////////wEaCXVz" + B64[:40] + "==",
     "aws_session_token=" + R("secret_assignment"), "secret_assignment"),
    ("openai key", "OPENAI_API_KEY=sk-" + A40 + "AbCdEfGh", "OPENAI_API_KEY=" + R("openai_key"), "openai_key"),
    ("openai project key", 'client = OpenAI(api_key="sk-proj-' + A40 + '")',
     'client = OpenAI(api_key="' + R("openai_key") + '")', "openai_key"),
    ("anthropic key", "ANTHROPIC_API_KEY=sk-ant-" + "api03-" + A40, "ANTHROPIC_API_KEY=" + R("anthropic_key"),
     "anthropic_key"),
    ("github classic token", "git remote set-url origin https://ghp_" + A40[:36] + "@github.com/o/r",
     "git remote set-url origin https://" + R("github_token") + "@github.com/o/r", "github_token"),
    ("github fine-grained token", "GH_TOKEN=github_pat_" + "11ABCDEFG0" + A40 + "_" + A40[:20],
     "GH_TOKEN=" + R("github_token"), "github_token"),
    ("gitlab token", "GITLAB_TOKEN=glpat-" + "xK9mP2qR7sT4vW8yZ1aB", "GITLAB_TOKEN=" + R("gitlab_token"),
     "gitlab_token"),
    ("slack bot token", "SLACK_BOT_TOKEN=xoxb-" + "1234567890-0987654321-" + A40[:24],
     "SLACK_BOT_TOKEN=" + R("slack_token"), "slack_token"),
    ("slack webhook", "POST https://hooks.slack.com/services/" + "T01ABCDEF/B02GHIJKL/" + A40[:24],
     "POST https://hooks.slack.com/services/" + R("webhook_url"), "webhook_url"),
    ("discord webhook", "https://discord.com/api/webhooks/" + "123456789012345678/" + A40 + A40[:28],
     "https://discord.com/api/webhooks/" + R("webhook_url"), "webhook_url"),
    ("stripe live key", "stripe.api_key = sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
     "stripe.api_key = " + R("stripe_key"), "stripe_key"),
    ("google api key", "https://maps.googleapis.com/maps/api/geocode/json?key=AIza" + "SyA1b2C3d4E5f6G7h8I9j0"
     + "K1l2M3n4O5p6Q", "https://maps.googleapis.com/maps/api/geocode/json?key=" + R("google_api_key"),
     "google_api_key"),
    ("gcp service account key id", '  "private_key_id": "' + HEX[:40] + '",',
     '  "private_key_id": "' + R("secret_assignment") + '",', "secret_assignment"),
    ("gcp service account private key",
     '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n"',
     '"private_key": "' + R("private_key") + '\\n"', "private_key"),
    ("hugging face token", "HF_TOKEN=hf_" + A40[:34], "HF_TOKEN=" + R("huggingface_token"), "huggingface_token"),
    ("npm token", "//registry.npmjs.org/:_authToken=npm_" + A40[:36],
     "//registry.npmjs.org/:_authToken=" + R("npm_token"), "npm_token"),
    ("pypi token", "password = pypi-AgEIcHlwaS5vcmc" + A40 + A40[:20], "password = " + R("pypi_token"), "pypi_token"),
    ("sendgrid key", "SENDGRID_API_KEY=SG." + A40[:22] + "." + A40 + "xyz", "SENDGRID_API_KEY=" + R("sendgrid_key"),
     "sendgrid_key"),
    ("azure storage account key",
     "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=" + B64[:86] + "==;EndpointSuffix=core.windows.net",
     "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=" + R("secret_assignment")
     + ";EndpointSuffix=core.windows.net", "secret_assignment"),
    ("azure service bus key",
     "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey="
     + B64[:43] + "=",
     "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey="
     + R("secret_assignment"), "secret_assignment"),
    ("digitalocean token", "DIGITALOCEAN_ACCESS_TOKEN=dop_v1_" + HEX,
     "DIGITALOCEAN_ACCESS_TOKEN=" + R("digitalocean_token"), "digitalocean_token"),
    ("shopify token", "X-Shopify-Access-Token: shpat_" + HEX[:32], "X-Shopify-Access-Token: " + R("shopify_token"),
     "shopify_token"),
    ("vault token", "VAULT_TOKEN=hvs." + A40[:24], "VAULT_TOKEN=" + R("vault_token"), "vault_token"),
    ("docker hub token", "echo dckr_pat_" + A40[:27] + " | docker login -u bob --password-stdin",
     "echo " + R("docker_token") + " | docker login -u bob --password-stdin", "docker_token"),
    ("databricks token", "DATABRICKS_TOKEN=dapi" + HEX[:32], "DATABRICKS_TOKEN=" + R("databricks_token"),
     "databricks_token"),
    ("reasoningbank token", "RB_TOKEN=rb_q8Zk3_Vd-9LmPwXy2TnB4cRf6HsJ0aEuGiKoNpQ1vW",
     "RB_TOKEN=" + R("reasoningbank_token"), "reasoningbank_token"),
    ("jwt", "id_token: " + JWT, "id_token: " + R("jwt"), "jwt"),
    ("rsa private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
     R("private_key"), "private_key"),
    ("openssh private key",
     "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----",
     R("private_key"), "private_key"),
    ("bearer header", "curl -H 'Authorization: Bearer " + A40 + "' https://api.example.com",
     "curl -H 'Authorization: Bearer " + R("authorization") + "' https://api.example.com", "authorization"),
    ("basic auth header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic " + R("authorization"),
     "authorization"),
    ("database url", "DATABASE_URL=postgres://app:s3cr3t@db.internal:5432/app",
     "DATABASE_URL=postgres://app:" + R("url_password") + "@db.internal:5432/app", "url_password"),
    ("export API_TOKEN", "export API_TOKEN=f3a9c2e1b7d84b6a9e0c5d2f1a8b7c6d",
     "export API_TOKEN=" + R("secret_assignment"), "secret_assignment"),
    ("token= in a query", "GET /download?token=a1B2c3D4e5F6g7H8&file=report.pdf",
     "GET /download?token=" + R("secret_assignment") + "&file=report.pdf", "secret_assignment"),
    ("DB_PASSWORD: yaml", "environment:\n  DB_PASSWORD: Tr0ub4dor3\n",
     "environment:\n  DB_PASSWORD: " + R("secret_assignment") + "\n", "secret_assignment"),
    ("DB_PASSWORD: inside a line", "set in .env: DB_PASSWORD: Tr0ub4dor3",
     "set in .env: DB_PASSWORD: " + R("secret_assignment"), "secret_assignment"),
    ("PGPASSWORD=", "PGPASSWORD=s3cr3t psql -h db -U app",
     "PGPASSWORD=" + R("secret_assignment") + " psql -h db -U app", "secret_assignment"),
    ("mysql -p", "mysql -h db -u root -pS3cr3t! app_db < dump.sql",
     "mysql -h db -u root -p" + R("cli_password") + " app_db < dump.sql", "cli_password"),
    ("mysqldump -p quoted", "mysqldump -uroot -p'pa ss' app > a.sql",
     "mysqldump -uroot -p'" + R("cli_password") + "' app > a.sql", "cli_password"),
    ("sshpass -p", "sshpass -p hunter2 ssh deploy@web1", "sshpass -p " + R("cli_password") + " ssh deploy@web1",
     "cli_password"),
    ("redis-cli -a", "redis-cli -h cache -a s3cr3tpw ping", "redis-cli -h cache -a " + R("cli_password") + " ping",
     "cli_password"),
    ("curl -u", "curl -u bob:pa55word https://api.example.com/x",
     "curl -u bob:" + R("cli_password") + " https://api.example.com/x", "cli_password"),
    ("--password flag", "psql --password hunter2 -c 'select 1'",
     "psql --password " + R("secret_assignment") + " -c 'select 1'", "secret_assignment"),
    ("client_secret", "client_secret=9d8f7e6c5b4a", "client_secret=" + R("secret_assignment"), "secret_assignment"),
    ("json secret", '{"secret": "abc123xyz"}', '{"secret": "' + R("secret_assignment") + '"}', "secret_assignment"),
    ("passphrase", "passphrase: correct horse battery", "passphrase: " + R("secret_assignment") + " horse battery",
     "secret_assignment"),
    (".netrc", "machine api.heroku.com\n  login bob@example.com\n  password 01234567-89ab-cdef",
     "machine api.heroku.com\n  login bob@example.com\n  password " + R("secret_assignment"), "secret_assignment"),
]  # fmt: skip


def test_the_table_covers_at_least_34_formats() -> None:
    assert len({name for name, *_ in FORMATS}) == len(FORMATS) >= 34


@pytest.mark.parametrize(("text", "expected", "kind"), [row[1:] for row in FORMATS], ids=[row[0] for row in FORMATS])
def test_each_common_format_is_redacted_and_its_surroundings_kept(text: str, expected: str, kind: str) -> None:
    assert kind in SECRET_KINDS
    assert scrub_secrets(text) == ScrubResult(text=expected, redactions=1, kinds=(kind,))


@pytest.mark.parametrize("text", [row[1] for row in FORMATS], ids=[row[0] for row in FORMATS])
def test_each_format_is_found_inside_a_json_encoded_trace_too(text: str) -> None:
    import json

    encoded = json.dumps({"output": text})
    scrubbed = scrub_secrets(encoded)
    assert scrubbed.redactions == 1
    assert json.loads(scrubbed.text)["output"].count("[REDACTED:") == 1


NOT_SECRETS = [
    "the token expired, so the agent asked the auth server for a new token",
    "token: the unit of text an LLM reads",
    "max_tokens=1024, tokens_used: 312, token_count=12",
    "max_token=1024",
    "token = None",
    "token = tok",
    "token = request.headers.get('Authorization')",
    "csrf_token = get_token(request)",
    "def verify(token: str) -> bool:",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "token_type: bearer",
    "export API_TOKEN=$API_TOKEN",
    "token=...",
    "PGPASSWORD=${PGPASSWORD} psql",
    "AccountKey=<your-storage-account-key>",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "md5 d41d8cd98f00b204e9800998ecf8427e and commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "request 123e4567-e89b-12d3-a456-426614174000 failed",
    "mysql -u root -p app_db",
    "mysql -h db -P 3306 -u app -p",
    "git log -p --stat && git diff -p",
    "curl -u bob https://api.example.com/x",
    "npm_config_registry=https://registry.npmjs.org/ npm install",
    "sshpass is a tool; glpat- tokens start with glpat-",
    "for i in range(10):\n    total += i  # accumulate\nprint(f'{total=}')",
    "SELECT id, title FROM memories WHERE confidence > 0.5 ORDER BY created_at DESC;",
    "password = os.environ['DB_PASSWORD']",
    "machine learning models need a login page and a password field",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_code_hashes_and_the_word_token_survive_untouched(text: str) -> None:
    assert scrub_secrets(text) == ScrubResult(text=text, redactions=0, kinds=())


def test_several_command_lines_are_each_read_to_their_own_end() -> None:
    text = "mysql -pAbc123 db; echo -pnot-a-password | mysql -u x -p\ncurl -u a:b1 x && curl -o f -p y"
    assert scrub_secrets(text).text == (
        "mysql -p[REDACTED:cli_password] db; echo -pnot-a-password | mysql -u x -p\n"
        "curl -u a:[REDACTED:cli_password] x && curl -o f -p y"
    )


def test_many_command_words_are_scrubbed_in_linear_time() -> None:
    import time

    text = "mysql " * 200_000 + "curl -u " * 100_000
    started = time.perf_counter()
    scrub_secrets(text)
    assert time.perf_counter() - started < 5
