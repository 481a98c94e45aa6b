"""Redaction: every planted secret is gone and counted, ordinary code and prose are untouched.

All secrets are generated here from a seeded RNG and carry FAKE/EXAMPLE markers where the shape
allows: correctly shaped, never real, and never a literal token in the source tree (so secret
scanners on the repo stay quiet).
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import time
from collections.abc import Callable

import pytest

from memeval.utils.redact import (
    DEFAULT_PATTERNS,
    DEFAULT_REDACTOR,
    RedactionPattern,
    Redactor,
    decoded_text,
    looks_random,
    redact,
)

_rng = random.Random(20240601)
UPPER_ALNUM = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


def fake(alphabet: str, n: int) -> str:
    """Random run of `alphabet` that always contains a digit (as real keys do)."""
    body = [_rng.choice(alphabet) for _ in range(n)]
    if not any(c.isdigit() for c in body) and any(c.isdigit() for c in alphabet):
        body[n // 2] = "7"
    return "".join(body)


def b64url(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


AWS_KEY_ID = "AKIAFAKE" + fake(UPPER_ALNUM, 12)
AWS_STS_KEY_ID = "ASIAFAKE" + fake(UPPER_ALNUM, 12)
AWS_SECRET = "FAKEsecret/" + fake(B64, 29)
GITHUB_PAT_CLASSIC = "ghp_FAKE" + fake(ALNUM, 32)
GITHUB_OAUTH = "gho_FAKE" + fake(ALNUM, 32)
GITHUB_APP = "ghs_FAKE" + fake(ALNUM, 32)
GITHUB_FINE = "github_pat_FAKE" + fake(ALNUM + "_", 78)
SLACK_BOT = "xoxb-0000000000-" + fake(ALNUM, 24)
SLACK_USER = "xoxp-1111111111-" + fake(ALNUM, 24)
STRIPE_LIVE = "sk_live_FAKE" + fake(ALNUM, 24)
STRIPE_TEST = "sk_test_FAKE" + fake(ALNUM, 24)
STRIPE_RESTRICTED = "rk_live_FAKE" + fake(ALNUM, 24)
OPENAI_KEY = "sk-proj-FAKE" + fake(B64URL, 40)
OPENAI_LEGACY = "sk-FAKE" + fake(ALNUM, 44)
ANTHROPIC_KEY = "sk-ant-api03-FAKE" + fake(B64URL, 80)
GOOGLE_KEY = "AIza" + "FAKE" + fake(B64URL, 31)
HF_TOKEN = "hf_FAKE" + fake(ALNUM, 30)
JWT = ".".join(
    (
        b64url({"alg": "HS256", "typ": "JWT"}),
        b64url({"sub": "fake-user-0001", "iat": 1700000000}),
        fake(B64URL, 43),
    )
)
GENERIC = "FAKEgeneric" + fake(ALNUM, 29)
PASSWORD = "Hunter2-FAKE!"
SHORT_PASSWORD = "Zq9!"
HEX_TOKEN = "fa4e" + fake(HEX, 36)
SLACK_WEBHOOK_PATH = "T0FAKE000/B0FAKE000/" + fake(ALNUM, 24)
DB_PASSWORD = "p4ss-FAKE-" + fake(ALNUM, 6)
SSH_PUB = "AAAAC3NzaC1lZDI1NTE5AAAAI" + fake(B64, 43)
SSH_RSA = "AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + fake(B64, 300)
EMAIL = "jane.doe+fake@example.com"
PEM_BODY_LINES = [fake(B64, 64) for _ in range(6)] + [fake(B64, 20) + "=="]
# shapes without a key name, and vendor formats added later
RANDOM_KEY = fake(B64, 40)  # an AWS-style secret key, pasted in prose
RANDOM_KEY_24 = fake(ALNUM, 24)
# an OAuth-style token of RFC 3986's unreserved characters: `.` and `~` split it into short runs
JOINED_KEY = fake(ALNUM, 4) + "." + fake(ALNUM, 4) + "~" + fake(ALNUM, 3) + "_" + fake(
    ALNUM, 4) + "-" + fake(ALNUM, 8) + "." + fake(ALNUM, 12)
BASIC_PAIR = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()  # `user:pass`, encoded
GITLAB_PAT = "glpat-" + fake(B64URL, 20)
NPM_TOKEN = "npm_" + fake(ALNUM, 36)
PYPI_TOKEN = "pypi-AgEIcHlwaS5vcmc" + fake(B64URL, 60)
SENDGRID_KEY = "SG." + fake(B64URL, 22) + "." + fake(B64URL, 43)
GOOGLE_CLIENT_SECRET = "GOCSPX-" + fake(B64URL, 28)
GOOGLE_ACCESS_TOKEN = "ya29." + fake(B64URL, 60)
DO_TOKEN = "dop_v1_" + fake(HEX, 64)
SHOPIFY_TOKEN = "shpat_" + fake(HEX, 32)
DOCKER_PAT = "dckr_pat_" + fake(B64URL, 27)
VAULT_TOKEN = "hvs." + fake(B64URL, 90)
AGE_KEY = "AGE-SECRET-KEY-1" + "".join(_rng.choice("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
                                       for _ in range(58))
TELEGRAM_TOKEN = "123456789:AA" + fake(B64URL, 33)
DATABRICKS_TOKEN = "dapi" + fake(HEX, 32)
TWILIO_KEY = "SK" + fake(HEX, 32)
AZURE_ACCOUNT_KEY = fake(B64, 86) + "=="
AZURE_SAS_KEY = fake(B64, 43) + "="
AZURE_SIG = fake(ALNUM, 40) + "%3D"


def pem(kind: str = "RSA ", newline: str = "\n") -> tuple[str, list[str]]:
    block = newline.join(
        [f"-----BEGIN {kind}PRIVATE KEY-----", *PEM_BODY_LINES, f"-----END {kind}PRIVATE KEY-----"]
    )
    return block, PEM_BODY_LINES


# (class, text, secrets that must disappear)
CASES: list[tuple[str, str, list[str]]] = [
    ("aws_access_key_id", f"aws_access_key_id = {AWS_KEY_ID}", [AWS_KEY_ID]),
    ("aws_access_key_id", f'{{"AccessKeyId": "{AWS_STS_KEY_ID}"}}', [AWS_STS_KEY_ID]),
    ("aws_secret_access_key", f"aws_secret_access_key = {AWS_SECRET}", [AWS_SECRET]),
    ("aws_secret_access_key", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", [AWS_SECRET]),
    ("aws_secret_access_key", f'"SecretAccessKey": "{AWS_SECRET}",', [AWS_SECRET]),
    (
        "aws_secret_access_key",
        f"aws configure set aws_secret_access_key {AWS_SECRET}",
        [AWS_SECRET],
    ),
    (
        "github_token",
        f"git remote set-url origin https://{GITHUB_PAT_CLASSIC}@github.com/o/r",
        [GITHUB_PAT_CLASSIC],
    ),
    ("github_token", f"GH_TOKEN={GITHUB_OAUTH}", [GITHUB_OAUTH]),
    ("github_token", f"installation token {GITHUB_APP} expires in 1h", [GITHUB_APP]),
    ("github_token", f"token: {GITHUB_FINE}", [GITHUB_FINE]),
    ("slack_token", f"SLACK_BOT_TOKEN={SLACK_BOT}", [SLACK_BOT]),
    ("slack_token", f"client = WebClient(token='{SLACK_USER}')", [SLACK_USER]),
    ("stripe_key", f"stripe.api_key = '{STRIPE_LIVE}'", [STRIPE_LIVE]),
    ("stripe_key", f"STRIPE_SECRET_KEY={STRIPE_TEST}", [STRIPE_TEST]),
    ("stripe_key", f"restricted key {STRIPE_RESTRICTED} for reporting", [STRIPE_RESTRICTED]),
    ("openai_key", f"export OPENAI_API_KEY={OPENAI_KEY}", [OPENAI_KEY]),
    ("openai_key", f'client = OpenAI(api_key="{OPENAI_LEGACY}")', [OPENAI_LEGACY]),
    ("anthropic_key", f"ANTHROPIC_API_KEY={ANTHROPIC_KEY}", [ANTHROPIC_KEY]),
    (
        "anthropic_key",
        f"curl -H 'x-api-key: {ANTHROPIC_KEY}' https://api.example.com",
        [ANTHROPIC_KEY],
    ),
    ("google_api_key", f"https://maps.example.com/api?key={GOOGLE_KEY}&q=x", [GOOGLE_KEY]),
    ("huggingface_token", f"huggingface-cli login --token {HF_TOKEN}", [HF_TOKEN]),
    ("jwt", f"session cookie: {JWT}; Path=/", [JWT]),
    ("jwt", f'{{"id_token": "{JWT}"}}', [JWT]),
    ("authorization_header", f"Authorization: Bearer {GENERIC}", [GENERIC]),
    ("authorization_header", f'-H "authorization: token {GENERIC}"', [GENERIC]),
    ("authorization_header", f'{{"Authorization": "Basic {GENERIC}=="}}', [GENERIC]),
    ("authorization_header", f"headers = {{'Authorization': 'Bearer {GENERIC}'}}", [GENERIC]),
    ("authorization_header", f"using Bearer {GENERIC} for the call", [GENERIC]),
    ("basic_auth", f"curl -u admin:{PASSWORD} https://registry.example.com", [PASSWORD]),
    ("basic_auth", f"curl --user 'svc:{DB_PASSWORD}' https://x.example.com", [DB_PASSWORD]),
    ("secret_assignment", f"api_key={GENERIC}", [GENERIC]),
    ("secret_assignment", f"apikey: {GENERIC}", [GENERIC]),
    ("secret_assignment", f'"access_token": "{GENERIC}"', [GENERIC]),
    ("secret_assignment", f"client_secret = '{GENERIC}'", [GENERIC]),
    ("secret_assignment", f"  private_key: {GENERIC}", [GENERIC]),
    ("secret_assignment", f"bearer={GENERIC}", [GENERIC]),
    ("secret_assignment", f'SECRET_KEY = "{GENERIC}"', [GENERIC]),
    ("secret_assignment", f"export MY_SERVICE_TOKEN={GENERIC}", [GENERIC]),
    ("secret_assignment", f"config.apiKey = `{GENERIC}`", [GENERIC]),
    ("secret_assignment", f"deploy --api-key {GENERIC} --region eu", [GENERIC]),
    ("secret_assignment", f'TOKEN := "{GENERIC}"', [GENERIC]),
    ("secret_assignment", f"'secret' => '{GENERIC}',", [GENERIC]),
    ("secret_assignment", f'{{\\"api_key\\": \\"{GENERIC}\\"}}', [GENERIC]),
    ("secret_assignment", f"X-Api-Key: {GENERIC}", [GENERIC]),
    ("secret_assignment", f"token={HEX_TOKEN}", [HEX_TOKEN]),
    ("password_assignment", f"password={PASSWORD}", [PASSWORD]),
    ("password_assignment", f"mysqladmin --db-password {DB_PASSWORD} status", [DB_PASSWORD]),
    ("password_assignment", f"passwd: {PASSWORD}", [PASSWORD]),
    ("password_assignment", f"pwd={SHORT_PASSWORD}", [SHORT_PASSWORD]),
    ("password_assignment", f'{{"password": "{PASSWORD}"}}', [PASSWORD]),
    ("password_assignment", f"DB_PASSWORD='{DB_PASSWORD}'", [DB_PASSWORD]),
    (
        "password_assignment",
        'PASSPHRASE="correct horse battery staple"',
        ["correct horse battery staple"],
    ),
    ("password_assignment", f"Server=db;User Id=sa;Password={DB_PASSWORD};", [DB_PASSWORD]),
    ("password_assignment", f"login(user='bob', password='{PASSWORD}')", [PASSWORD]),
    (
        "uri_credentials",
        f"DATABASE_URL=postgres://app:{DB_PASSWORD}@db.internal:5432/app",
        [DB_PASSWORD],
    ),
    ("uri_credentials", f"postgresql://app:{DB_PASSWORD}@localhost/app", [DB_PASSWORD]),
    ("uri_credentials", f"mysql://root:{DB_PASSWORD}@127.0.0.1:3306/db", [DB_PASSWORD]),
    (
        "uri_credentials",
        f"mongodb+srv://admin:{DB_PASSWORD}@cluster0.example.net/?w=majority",
        [DB_PASSWORD],
    ),
    ("uri_credentials", f"mongodb://u:{DB_PASSWORD}@h1:27017,h2:27017/db", [DB_PASSWORD]),
    ("uri_credentials", f"redis://:{DB_PASSWORD}@cache:6379/0", [DB_PASSWORD]),
    (  # as Hydra writes an override in a sweep's job list and its .hydra files
        "uri_credentials",
        f"judge.base_url=http\\://judge\\:{DB_PASSWORD}@127.0.0.1\\:8080/v1",
        [DB_PASSWORD],
    ),
    ("uri_credentials", f"rediss://default:{DB_PASSWORD}@cache.example.com:6380", [DB_PASSWORD]),
    ("uri_credentials", f"amqp://guest:{DB_PASSWORD}@rabbit:5672/", [DB_PASSWORD]),
    ("uri_credentials", f"amqps://svc:{DB_PASSWORD}@mq.example.com/vhost", [DB_PASSWORD]),
    (
        "uri_credentials",
        f"https://deploy:{DB_PASSWORD}@artifacts.example.com/simple/",
        [DB_PASSWORD],
    ),
    ("ssh_key", f"ssh-ed25519 {SSH_PUB} dev laptop", [SSH_PUB]),
    ("ssh_key", f'command="x" ssh-rsa {SSH_RSA}', [SSH_RSA]),
    (
        "slack_webhook",
        f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{SLACK_WEBHOOK_PATH}",
        [SLACK_WEBHOOK_PATH],
    ),
    ("email", f"Author: Jane Doe <{EMAIL}>", [EMAIL]),
    ("email", "mailto:ops-team@mail.example.co.uk", ["ops-team@mail.example.co.uk"]),
    ("email", "напишите josé.garcía@exämple.org сегодня", ["josé.garcía@exämple.org"]),
    # any URL scheme carries credentials, e.g. a configured server URL
    (
        "uri_credentials",
        f"judge.base_url=http://judge:{DB_PASSWORD}@127.0.0.1:8080/v1",
        [DB_PASSWORD],
    ),
    ("uri_credentials", f"ftp://deploy:{PASSWORD}@files.example.com/", [PASSWORD]),
    ("gitlab_token", f"curl -H 'PRIVATE-TOKEN: {GITLAB_PAT}' https://gl.example.com", [GITLAB_PAT]),
    ("gitlab_token", f"GITLAB_TOKEN={GITLAB_PAT}", [GITLAB_PAT]),
    ("npm_token", f"//registry.npmjs.org/:_authToken={NPM_TOKEN}", [NPM_TOKEN]),
    ("pypi_token", f"twine upload -p {PYPI_TOKEN} dist/*", [PYPI_TOKEN]),
    ("sendgrid_key", f"SENDGRID_API_KEY={SENDGRID_KEY}", [SENDGRID_KEY]),
    ("google_oauth", f'"client_secret": "{GOOGLE_CLIENT_SECRET}"', [GOOGLE_CLIENT_SECRET]),
    ("google_oauth", f"access token {GOOGLE_ACCESS_TOKEN} expires", [GOOGLE_ACCESS_TOKEN]),
    ("digitalocean_token", f"doctl auth init -t {DO_TOKEN}", [DO_TOKEN]),
    ("shopify_token", f"X-Shopify-Access-Token: {SHOPIFY_TOKEN}", [SHOPIFY_TOKEN]),
    ("docker_hub_token", f"echo {DOCKER_PAT} | docker login -u me --password-stdin", [DOCKER_PAT]),
    ("vault_token", f"export VAULT_TOKEN={VAULT_TOKEN}", [VAULT_TOKEN]),
    ("age_secret_key", f"# created: 2024-01-01\n{AGE_KEY}\n", [AGE_KEY]),
    ("telegram_bot_token", f"https://api.telegram.org/bot{TELEGRAM_TOKEN}/getMe", [TELEGRAM_TOKEN]),
    ("databricks_token", f"DATABRICKS_TOKEN={DATABRICKS_TOKEN}", [DATABRICKS_TOKEN]),
    ("twilio_key", f"client = Client({TWILIO_KEY!r}, secret, account_sid)", [TWILIO_KEY]),
    ("twilio_key", f"the API key SID is {TWILIO_KEY}.", [TWILIO_KEY]),
    (
        "azure_key",
        "DefaultEndpointsProtocol=https;AccountName=acct;"
        f"AccountKey={AZURE_ACCOUNT_KEY};EndpointSuffix=core.windows.net",
        [AZURE_ACCOUNT_KEY],
    ),
    (
        "azure_key",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        f"SharedAccessKey={AZURE_SAS_KEY}",
        [AZURE_SAS_KEY],
    ),
    (
        "azure_key",
        f"https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&sig={AZURE_SIG}&se=x",
        [AZURE_SIG],
    ),
    ("cli_password", f"mysql -uroot -p{PASSWORD} -h db orders", [PASSWORD]),
    ("cli_password", f"mysqldump -u root -p'{DB_PASSWORD}' orders > dump.sql", [DB_PASSWORD]),
    ("cli_password", f'mariadb -h db -u app -p"{DB_PASSWORD}"', [DB_PASSWORD]),
    ("cli_password", f"sshpass -p {DB_PASSWORD} ssh deploy@host", [DB_PASSWORD]),
    ("cli_password", f"redis-cli -h cache -a {DB_PASSWORD} ping", [DB_PASSWORD]),
    ("netrc_password", f"machine api.example.com login alice password {PASSWORD}", [PASSWORD]),
    (
        "netrc_password",
        f"$ cat ~/.netrc\nmachine github.com\n  login bot\n  password {DB_PASSWORD}\n",
        [DB_PASSWORD],
    ),
    ("netrc_password", f"default login anonymous password {PASSWORD}", [PASSWORD]),
    ("keyword_secret", f"the db password is {PASSWORD}, don't share it", [PASSWORD]),
    ("keyword_secret", f"The password for the admin account is {DB_PASSWORD}.", [DB_PASSWORD]),
    ("keyword_secret", f"I set the passphrase to `{SHORT_PASSWORD}!xy`", [SHORT_PASSWORD]),
    ("keyword_secret", f"the token is now {RANDOM_KEY_24}", [RANDOM_KEY_24]),
    ("keyword_secret", f"my AWS secret key {RANDOM_KEY} (rotated)", [RANDOM_KEY]),
    ("high_entropy", f"I rotated it, the new one is {RANDOM_KEY} and it works.", [RANDOM_KEY]),
    ("high_entropy", f'"{RANDOM_KEY_24}",', [RANDOM_KEY_24]),
    (
        "base64_secret",
        "data:\n  credentials: "
        + base64.b64encode(f"aws_secret_access_key = {AWS_SECRET}\n".encode()).decode(),
        [AWS_SECRET, base64.b64encode(f"aws_secret_access_key = {AWS_SECRET}\n".encode())
         .decode()[:40]],
    ),
    (
        "base64_secret",
        "echo " + base64.urlsafe_b64encode(GITHUB_PAT_CLASSIC.encode()).decode().rstrip("="),
        [base64.urlsafe_b64encode(GITHUB_PAT_CLASSIC.encode()).decode().rstrip("=")],
    ),
    (
        "base64_secret",  # base64 of base64: decoded again
        base64.b64encode(base64.b64encode(STRIPE_LIVE.encode())).decode(),
        [base64.b64encode(base64.b64encode(STRIPE_LIVE.encode())).decode()],
    ),
    ("high_entropy", f"use {JOINED_KEY} for the upload.", [JOINED_KEY, JOINED_KEY[:9]]),
    ("high_entropy", JOINED_KEY, [JOINED_KEY, JOINED_KEY[:9]]),
    ("secret_assignment", f"token: {JOINED_KEY}", [JOINED_KEY]),
    ("secret_assignment", f"token: ~{JOINED_KEY}", [JOINED_KEY]),  # not a home-relative path
    ("keyword_secret", f"the token is {JOINED_KEY} now", [JOINED_KEY]),
    ("basic_auth", f"curl -H 'Basic {BASIC_PAIR}' https://registry.example.com", [BASIC_PAIR]),
    ("basic_auth", "send BASIC " + base64.b64encode(b"ci:ci").decode(),
     [base64.b64encode(b"ci:ci").decode()]),
    ("basic_auth", f"the auth field holds {BASIC_PAIR}.", [BASIC_PAIR]),
    ("basic_auth", f'{{"auths": {{"ghcr.io": {{"auth": "{BASIC_PAIR}"}}}}}}', [BASIC_PAIR]),
    ("basic_auth", base64.b64encode(b"deploy:Zq9!" + fake(ALNUM, 8).encode() + b"\n").decode(),
     [base64.b64encode(b"deploy:Zq9!").decode()[:12]]),  # `echo user:pass | base64`
]


@pytest.mark.parametrize(
    ("cls", "text", "secrets"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_each_class_is_redacted_and_counted(cls: str, text: str, secrets: list[str]) -> None:
    out, counts = DEFAULT_REDACTOR.redact_with_counts(text)
    for secret in secrets:
        assert secret not in out, out
    assert counts.get(cls, 0) >= 1, (out, counts)
    assert f"[REDACTED:{cls}]" in out


@pytest.mark.parametrize("kind", ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA "])
def test_pem_blocks_of_every_kind(kind: str) -> None:
    block, lines = pem(kind)
    out, counts = DEFAULT_REDACTOR.redact_with_counts(f"key file:\n{block}\ndone")
    assert out == "key file:\n[REDACTED:pem_private_key]\ndone"
    assert counts == {"pem_private_key": 1}
    assert not any(line in out for line in lines)


def test_pem_inside_json_string_with_escaped_newlines() -> None:
    """GCP service-account JSON: PEM goes before generic assignments, so it is one redaction."""
    block, lines = pem("", newline="\\n")
    text = f'{{"type": "service_account", "private_key": "{block}\\n", "client_email": "{EMAIL}"}}'
    out, counts = DEFAULT_REDACTOR.redact_with_counts(text)
    assert '"private_key": "[REDACTED:pem_private_key]\\n"' in out
    assert counts == {"pem_private_key": 1, "email": 1}
    assert not any(line in out for line in lines)


def test_pem_with_encryption_headers_and_crlf() -> None:
    block = "\r\n".join(
        [
            "-----BEGIN RSA PRIVATE KEY-----",
            "Proc-Type: 4,ENCRYPTED",
            "DEK-Info: AES-128-CBC,0FAKE0" + fake(HEX.upper(), 26),
            "",
            *PEM_BODY_LINES,
            "-----END RSA PRIVATE KEY-----",
        ]
    )
    out = redact(block)
    assert out == "[REDACTED:pem_private_key]"


def test_truncated_pem_body_lines_are_redacted_prose_after_is_mostly_kept() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(PEM_BODY_LINES[:3])
    text += "\n... output truncated (exit 0). Next, run the tests."
    out = redact(text)
    assert not any(line in out for line in PEM_BODY_LINES[:3])
    assert out.startswith("[REDACTED:pem_private_key]")
    assert "output truncated (exit 0). Next, run the tests." in out


def test_context_is_kept_around_secrets() -> None:
    assert redact(f"api_key={GENERIC}") == "api_key=[REDACTED:secret_assignment]"
    assert (
        redact(f"postgres://admin:{DB_PASSWORD}@db.internal:5432/app")
        == "postgres://[REDACTED:uri_credentials]@db.internal:5432/app"
    )
    assert (
        redact(f'{{"password": "{PASSWORD}"}}') == '{"password": "[REDACTED:password_assignment]"}'
    )
    assert redact(f"Authorization: Bearer {GENERIC}") == (
        "Authorization: Bearer [REDACTED:authorization_header]"
    )
    assert redact(f"ssh-ed25519 {SSH_PUB} me") == "ssh-ed25519 [REDACTED:ssh_key] me"
    assert redact(f"export OPENAI_API_KEY={OPENAI_KEY}") == (
        "export OPENAI_API_KEY=[REDACTED:openai_key]"
    )


def test_uri_credentials_win_over_email() -> None:
    """`pass@host.tld` looks like an e-mail; URIs run first so the right class is counted."""
    out, counts = DEFAULT_REDACTOR.redact_with_counts(
        f"mongodb://admin:{DB_PASSWORD}@mongo.example.com:27017"
    )
    assert counts == {"uri_credentials": 1}
    assert out == "mongodb://[REDACTED:uri_credentials]@mongo.example.com:27017"


def test_vendor_format_wins_over_generic_assignment() -> None:
    out, counts = DEFAULT_REDACTOR.redact_with_counts(f'GITHUB_TOKEN="{GITHUB_PAT_CLASSIC}"')
    assert out == 'GITHUB_TOKEN="[REDACTED:github_token]"'
    assert counts == {"github_token": 1}


# --- secrets in realistic containers ---------------------------------------------------------


def _assert_all_gone(text: str, secrets: list[str], expected: dict[str, int]) -> str:
    out, counts = DEFAULT_REDACTOR.redact_with_counts(text)
    for secret in secrets:
        assert secret not in out, (secret, out)
    assert counts == expected, (counts, out)
    return out


def test_json_tool_output() -> None:
    text = json.dumps(
        {
            "Credentials": {
                "AccessKeyId": AWS_STS_KEY_ID,
                "SecretAccessKey": AWS_SECRET,
                "SessionToken": "FQoFAKE" + fake(B64, 120),
            },
            "user": {"email": EMAIL, "password": PASSWORD},
        },
        indent=2,
    )
    out = _assert_all_gone(
        text,
        [AWS_STS_KEY_ID, AWS_SECRET, EMAIL, PASSWORD],
        {
            "aws_access_key_id": 1,
            "aws_secret_access_key": 1,
            "secret_assignment": 1,
            "password_assignment": 1,
            "email": 1,
        },
    )
    assert '"SessionToken": "[REDACTED:secret_assignment]"' in out
    json.loads(out)  # still valid JSON


def test_yaml_config() -> None:
    text = (
        "database:\n"
        "  host: db.internal\n"
        f"  password: {DB_PASSWORD}\n"
        "  url: postgres://app:" + DB_PASSWORD + "@db.internal/app\n"
        "slack:\n"
        f"  bot_token: {SLACK_BOT}\n"
        "openai:\n"
        f'  api_key: "{OPENAI_KEY}"\n'
        "secret_name: db-creds\n"
    )
    out = _assert_all_gone(
        text,
        [DB_PASSWORD, SLACK_BOT, OPENAI_KEY],
        {"password_assignment": 1, "uri_credentials": 1, "slack_token": 1, "openai_key": 1},
    )
    assert "secret_name: db-creds" in out
    assert "host: db.internal" in out


def test_shell_exports_and_env_dump() -> None:
    text = (
        f"export AWS_ACCESS_KEY_ID={AWS_KEY_ID}\n"
        f"export AWS_SECRET_ACCESS_KEY='{AWS_SECRET}'\n"
        f'export ANTHROPIC_API_KEY="{ANTHROPIC_KEY}"\n'
        f"export HF_TOKEN={HF_TOKEN}\n"
        "PWD=/home/dev/project\n"
        "OLDPWD=/home/dev\n"
        "PATH=/usr/local/bin:/usr/bin\n"
    )
    out = _assert_all_gone(
        text,
        [AWS_KEY_ID, AWS_SECRET, ANTHROPIC_KEY, HF_TOKEN],
        {
            "aws_access_key_id": 1,
            "aws_secret_access_key": 1,
            "anthropic_key": 1,
            "huggingface_token": 1,
        },
    )
    assert "PWD=/home/dev/project\nOLDPWD=/home/dev\nPATH=/usr/local/bin:/usr/bin" in out


def test_curl_command_line() -> None:
    text = (
        "curl -sS -X POST https://api.example.com/v1/messages \\\n"
        f'  -H "Authorization: Bearer {GENERIC}" \\\n'
        f"  -H 'x-api-key: {ANTHROPIC_KEY}' \\\n"
        f"  -u deploy:{DB_PASSWORD} \\\n"
        f'  -d \'{{"password":"{PASSWORD}","to":"{EMAIL}"}}\''
    )
    _assert_all_gone(
        text,
        [GENERIC, ANTHROPIC_KEY, DB_PASSWORD, PASSWORD, EMAIL],
        {
            "authorization_header": 1,
            "anthropic_key": 1,
            "basic_auth": 1,
            "password_assignment": 1,
            "email": 1,
        },
    )


def test_python_dict_and_kwargs() -> None:
    text = (
        "settings = {\n"
        f"    'api_key': '{GENERIC}',\n"
        f"    'stripe': '{STRIPE_LIVE}',\n"
        f"    'PASSWORD': '{DB_PASSWORD}',\n"
        "    'PASSWORD_HASHERS': [],\n"
        "}\n"
        f'client = Client(token="{GITHUB_APP}", password=password)\n'
    )
    out = _assert_all_gone(
        text,
        [GENERIC, STRIPE_LIVE, DB_PASSWORD, GITHUB_APP],
        {
            "secret_assignment": 1,
            "stripe_key": 1,
            "password_assignment": 1,
            "github_token": 1,
        },
    )
    assert "password=password)" in out
    assert "'PASSWORD_HASHERS': []" in out


def test_url_query_parameters() -> None:
    text = (
        f"GET https://api.example.com/v2/items?access_token={GENERIC}&page=2&limit=50 "
        f"and https://svc.example.com/login?user=bob&password={PASSWORD}&next=%2Fhome"
    )
    out = _assert_all_gone(
        text, [GENERIC, PASSWORD], {"secret_assignment": 1, "password_assignment": 1}
    )
    assert "&page=2&limit=50" in out
    assert "?user=bob&password=[REDACTED:password_assignment]&next=%2Fhome" in out


def test_log_lines() -> None:
    text = (
        "2024-05-01T12:00:00Z INFO  auth: issued "
        f"jwt={JWT} for user={EMAIL}\n"
        f"2024-05-01T12:00:01Z DEBUG http: Authorization: Basic {GENERIC}\n"
        f"2024-05-01T12:00:02Z WARN  retrying with token={GENERIC[::-1]}\n"
    )
    _assert_all_gone(
        text,
        [JWT, EMAIL, GENERIC, GENERIC[::-1]],
        {"jwt": 1, "email": 1, "authorization_header": 1, "secret_assignment": 1},
    )


def test_markdown_code_fences() -> None:
    text = (
        "Set your keys:\n\n"
        "```bash\n"
        f"export OPENAI_API_KEY={OPENAI_KEY}\n"
        f"export STRIPE_KEY={STRIPE_TEST}\n"
        "```\n\n"
        "```python\n"
        f'client = Anthropic(api_key="{ANTHROPIC_KEY}")\n'
        "token = tokenizer.encode(text)\n"
        "```\n"
    )
    out = _assert_all_gone(
        text,
        [OPENAI_KEY, STRIPE_TEST, ANTHROPIC_KEY],
        {"openai_key": 1, "stripe_key": 1, "anthropic_key": 1},
    )
    assert "```bash\n" in out
    assert "token = tokenizer.encode(text)" in out


def test_many_secrets_in_one_text_are_all_counted() -> None:
    block, lines = pem("EC ")
    parts = [
        f"first {AWS_KEY_ID}",
        f"gh {GITHUB_PAT_CLASSIC} and {GITHUB_FINE}",
        f"mail {EMAIL} / other-dev@example.org",
        block,
        f"redis://:{DB_PASSWORD}@cache:6379",
        f"jwt {JWT}",
    ]
    out, counts = DEFAULT_REDACTOR.redact_with_counts("\n".join(parts))
    assert counts == {
        "pem_private_key": 1,
        "uri_credentials": 1,
        "aws_access_key_id": 1,
        "github_token": 2,
        "jwt": 1,
        "email": 2,
    }
    for secret in [AWS_KEY_ID, GITHUB_PAT_CLASSIC, GITHUB_FINE, EMAIL, DB_PASSWORD, JWT, *lines]:
        assert secret not in out


def test_unicode_around_secrets() -> None:
    text = (
        f'🔑 clé API : api_key="{GENERIC}" — ok ✅\n'
        f"密码：password={PASSWORD}。\n"
        f"Контакт: {EMAIL}, ключ {OPENAI_KEY}…\n"
        f"ñandú\u00a0{GITHUB_OAUTH}\u200b fin"
    )
    out = _assert_all_gone(
        text,
        [GENERIC, PASSWORD, EMAIL, OPENAI_KEY, GITHUB_OAUTH],
        {
            "secret_assignment": 1,
            "password_assignment": 1,
            "email": 1,
            "openai_key": 1,
            "github_token": 1,
        },
    )
    assert "🔑 clé API" in out and "✅" in out and "ñandú" in out


# --- adversarial variants --------------------------------------------------------------------
# How secrets really turn up in traces: inside (re-)escaped JSON, fences, shell and YAML, URLs,
# under any key spelling and separator, glued to punctuation, wrapped, repeated, in CJK prose.

# JSON inside JSON: a tool result that was itself a JSON string, serialised again.
_INNER = json.dumps({"api_key": GENERIC, "password": PASSWORD, "auth": f"Bearer {GENERIC}"})

# (class, text, secrets that must disappear)
ADVERSARIAL_CASES: list[tuple[str, str, list[str]]] = [
    # JSON, with escaped quotes one, two and three levels deep
    ("secret_assignment", json.dumps(_INNER), [GENERIC]),
    ("secret_assignment", json.dumps(json.dumps(_INNER)), [GENERIC]),
    ("password_assignment", json.dumps(json.dumps(_INNER)), [PASSWORD]),
    ("password_assignment", json.dumps(json.dumps(json.dumps(_INNER))), [PASSWORD]),
    ("github_token", json.dumps({"env": {"GH_TOKEN": GITHUB_PAT_CLASSIC}}), [GITHUB_PAT_CLASSIC]),
    # code fences
    ("aws_access_key_id", f"```ini\n[default]\naws_access_key_id={AWS_KEY_ID}\n```", [AWS_KEY_ID]),
    ("anthropic_key", f"```\n{ANTHROPIC_KEY}\n```", [ANTHROPIC_KEY]),
    ("secret_assignment", f"~~~sh\nexport SERVICE_TOKEN='{GENERIC}'\n~~~", [GENERIC]),
    # shell
    ("secret_assignment", f"export FOO_API_KEY={GENERIC} && ./run.sh", [GENERIC]),
    ("password_assignment", f"PGPASSWORD={PASSWORD} psql -h db -U app", [PASSWORD]),
    ("password_assignment", f'export DB_PASS="{PASSWORD}"', [PASSWORD]),
    ("password_assignment", f"SMTP_PASS={PASSWORD}", [PASSWORD]),
    ("aws_secret_access_key", f"set -x; export AWS_SECRET_ACCESS_KEY={AWS_SECRET};", [AWS_SECRET]),
    # YAML, including the value on the next line and block scalars
    ("secret_assignment", f"openai:\n  api_key: {GENERIC}\n", [GENERIC]),
    ("secret_assignment", f"credentials:\n  api_key:\n    {GENERIC}\n", [GENERIC]),
    ("secret_assignment", f"api_token: |\n  {GENERIC}\nnext: 1\n", [GENERIC]),
    ("secret_assignment", f"client_secret: >-\n    {GENERIC}\n", [GENERIC]),
    ("password_assignment", f"db:\n  password: '{PASSWORD}'  # rotate!\n", [PASSWORD]),
    ("password_assignment", f"db:\n  password:\n    {DB_PASSWORD}\n", [DB_PASSWORD]),
    # URL query parameters
    ("secret_assignment", f"curl 'https://x.example.com/a?api_key={GENERIC}&page=2'", [GENERIC]),
    ("secret_assignment", f"https://x.example.com/?q=1&Token={GENERIC}#top", [GENERIC]),
    ("password_assignment", f"jdbc:postgresql://db/a?user=a&password={DB_PASSWORD}", [DB_PASSWORD]),
    # key spellings and separators
    ("secret_assignment", f"API_KEY => {GENERIC}", [GENERIC]),
    ("secret_assignment", f"ApiKey:{GENERIC}", [GENERIC]),
    ("secret_assignment", f"X-API-KEY: {GENERIC}", [GENERIC]),
    ("secret_assignment", f"$env:API_KEY = \"{GENERIC}\"", [GENERIC]),
    ("secret_assignment", f"api_key = '''{GENERIC}'''", [GENERIC]),
    ("password_assignment", f'password = """{PASSWORD}"""', [PASSWORD]),
    ("secret_assignment", f"token：{GENERIC}", [GENERIC]),  # full-width colon in CJK prose
    # keys with a suffix after the keyword
    ("secret_assignment", f"SECRET_KEY_BASE={HEX_TOKEN}{HEX_TOKEN}", [HEX_TOKEN]),
    ("secret_assignment", f"STRIPE_API_KEY_PROD={GENERIC}", [GENERIC]),
    ("secret_assignment", f"GITHUB_TOKEN_2: {GENERIC}", [GENERIC]),
    ("password_assignment", f"DB_PASSWORD_V2='{PASSWORD}'", [PASSWORD]),
    # XML config (Maven settings.xml, .NET)
    ("password_assignment", f"<server><password>{PASSWORD}</password></server>", [PASSWORD]),
    ("secret_assignment", f"<apiKey>{GENERIC}</apiKey>", [GENERIC]),
    # JWT inside headers and cookies
    ("jwt", f"-H 'Authorization: Bearer {JWT}'", [JWT]),
    ("jwt", f'{{"headers": {{"Authorization": "Bearer {JWT}"}}}}', [JWT]),
    ("jwt", f"Set-Cookie: id_token={JWT}; HttpOnly; Secure", [JWT]),
    ("jwt", f"X-Amzn-Oidc-Data: {JWT}", [JWT]),
    ("authorization_header", f"Proxy-Authorization: Basic {GENERIC}", [GENERIC]),
    ("authorization_header", f"'Authorization' => 'Bearer {GENERIC}',", [GENERIC]),
    # database and broker URIs
    ("uri_credentials", f"postgresql+psycopg2://app:{DB_PASSWORD}@db:5432/app", [DB_PASSWORD]),
    ("uri_credentials", f"mysql+pymysql://root:{DB_PASSWORD}@localhost/db", [DB_PASSWORD]),
    (
        "uri_credentials",
        f"MONGO_URI='mongodb+srv://svc:{DB_PASSWORD}@c0.ab1cd.mongodb.net/db?retryWrites=true'",
        [DB_PASSWORD],
    ),
    ("uri_credentials", f"CELERY_BROKER=redis://:{DB_PASSWORD}@redis:6379/1", [DB_PASSWORD]),
    ("uri_credentials", f"amqp://svc:{DB_PASSWORD}@rabbit:5672/%2F", [DB_PASSWORD]),
    # an unencoded `@` inside the password: all of it goes, not just the part before the `@`
    ("uri_credentials", f"postgres://app:{DB_PASSWORD}@x{PASSWORD}@db:5432/app", [PASSWORD]),
    # Azure: the user name itself carries `@server`
    (
        "uri_credentials",
        f"postgres://admin@srv1:{DB_PASSWORD}@srv1.postgres.database.azure.com/db",
        [DB_PASSWORD],
    ),
    # e-mail: plus-addressing, subdomains, glued to brackets and quotes
    ("email", "cc <first.last+billing@eu.mail.example.co.uk>.", ["first.last+billing"]),
    ("email", '"to": "ops+alerts@sub.dept.example.org",', ["ops+alerts@sub"]),
    ("email", "(contact: A_B-c.d+x@mx-1.example.io)", ["A_B-c.d+x"]),
    ("email", "a~ops@example.io is not an override", ["ops@example.io"]),
    # PEM blocks wrapped, quoted or commented line by line
    ("pem_private_key", "> " + pem()[0].replace("\n", "\n> "), PEM_BODY_LINES),
    ("pem_private_key", "# " + pem("EC ")[0].replace("\n", "\n# "), PEM_BODY_LINES),
    ("pem_private_key", pem(newline="\r\n")[0], PEM_BODY_LINES),
    (
        "pem_private_key",
        'KEY = ("' + pem()[0].replace("\n", '\\n"\n       "') + '\\n")',
        PEM_BODY_LINES,
    ),
]


@pytest.mark.parametrize(
    ("cls", "text", "secrets"),
    ADVERSARIAL_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(ADVERSARIAL_CASES)],
)
def test_adversarial_variants_are_redacted(cls: str, text: str, secrets: list[str]) -> None:
    out, counts = DEFAULT_REDACTOR.redact_with_counts(text)
    for secret in secrets:
        assert secret not in out, (secret, out)
    assert counts.get(cls, 0) >= 1, (out, counts)
    assert redact(out) == out  # idempotent on these shapes too


# One canonical text per class, each ending in its secret, to glue punctuation and prose onto.
ENDS_IN_SECRET: dict[str, tuple[str, str]] = {
    "aws_access_key_id": (f"id {AWS_KEY_ID}", AWS_KEY_ID),
    "aws_secret_access_key": (f"aws_secret_access_key={AWS_SECRET}", AWS_SECRET),
    "github_token": (f"gh {GITHUB_FINE}", GITHUB_FINE),
    "slack_token": (f"slack {SLACK_BOT}", SLACK_BOT),
    "stripe_key": (f"stripe {STRIPE_LIVE}", STRIPE_LIVE),
    "openai_key": (f"key {OPENAI_KEY}", OPENAI_KEY),
    "anthropic_key": (f"key {ANTHROPIC_KEY}", ANTHROPIC_KEY),
    "google_api_key": (f"maps {GOOGLE_KEY}", GOOGLE_KEY),
    "huggingface_token": (f"hf {HF_TOKEN}", HF_TOKEN),
    "jwt": (f"jwt {JWT}", JWT),
    "ssh_key": (f"ssh-ed25519 {SSH_PUB}", SSH_PUB),
    "authorization_header": (f"Authorization: Bearer {GENERIC}", GENERIC),
    "secret_assignment": (f"api_key={GENERIC}", GENERIC),
    "password_assignment": (f"password={DB_PASSWORD}", DB_PASSWORD),
    "uri_credentials": (f"redis://:{DB_PASSWORD}@cache", DB_PASSWORD),
    "email": (f"mail {EMAIL}", EMAIL),
    "gitlab_token": (f"gl {GITLAB_PAT}", GITLAB_PAT),
    "twilio_key": (f"sid {TWILIO_KEY}", TWILIO_KEY),
    "high_entropy": (f"new one {RANDOM_KEY}", RANDOM_KEY),
    "keyword_secret": (f"the db password is {PASSWORD}", PASSWORD),
    "netrc_password": (f"machine h login u password {PASSWORD}", PASSWORD),
}


@pytest.mark.parametrize("punct", [".", ",", ")", '"', "'", ";", "…", "。"])
@pytest.mark.parametrize("cls", list(ENDS_IN_SECRET))
def test_secret_followed_by_punctuation_and_unicode(cls: str, punct: str) -> None:
    """A sentence-final `.` or a closing `)` neither hides the secret nor lets prose be eaten."""
    text, secret = ENDS_IN_SECRET[cls]
    out, counts = DEFAULT_REDACTOR.redact_with_counts(f"«🔑 {text}{punct} — merci» fin")
    assert secret not in out, out
    assert counts.get(cls, 0) == 1, (out, counts)
    assert out.startswith("«🔑 ") and out.endswith(" — merci» fin"), out


@pytest.mark.parametrize("key", ["api_key", "API_KEY", "ApiKey", "x-api-key", "Client_Secret",
                                 "ACCESS_TOKEN", "authToken"])
@pytest.mark.parametrize("sep", ["=", ":", "=>", " = ", ": ", ":=", "\t=\t"])
@pytest.mark.parametrize("quote", ["", '"', "'", '\\"'])
def test_secret_assignment_any_key_case_separator_and_quote(key: str, sep: str,
                                                            quote: str) -> None:
    out = redact(f"{quote}{key}{quote}{sep}{quote}{GENERIC}{quote},")
    assert GENERIC not in out
    assert out == f"{quote}{key}{quote}{sep}{quote}[REDACTED:secret_assignment]{quote},"


@pytest.mark.parametrize("key", ["password", "PASSWORD", "Passwd", "db_pwd", "MYSQL_ROOT_PASSWORD",
                                 "smtp.pass", "passphrase"])
@pytest.mark.parametrize("sep", ["=", ": ", " => "])
@pytest.mark.parametrize("quote", ["", '"', "'"])
def test_password_any_key_case_separator_and_quote(key: str, sep: str, quote: str) -> None:
    out = redact(f"{key}{sep}{quote}{PASSWORD}{quote} next")
    assert PASSWORD not in out
    assert out == f"{key}{sep}{quote}[REDACTED:password_assignment]{quote} next"


def test_several_secrets_on_one_line_and_a_repeated_secret() -> None:
    line = (
        f"token={GENERIC} password={PASSWORD} again token={GENERIC}; "
        f"{EMAIL},{EMAIL} {GITHUB_OAUTH}|{GITHUB_OAUTH} postgres://a:{DB_PASSWORD}@h/x"
    )
    out, counts = DEFAULT_REDACTOR.redact_with_counts(line)
    for secret in (GENERIC, PASSWORD, EMAIL, GITHUB_OAUTH, DB_PASSWORD):
        assert secret not in out
    assert counts == {
        "uri_credentials": 1,
        "github_token": 2,
        "secret_assignment": 2,
        "password_assignment": 1,
        "email": 2,
    }
    assert "\n" not in out and out.count("[REDACTED:") == 8


def test_pem_wrapped_in_a_yaml_block_scalar_keeps_the_yaml() -> None:
    block, lines = pem("OPENSSH ")
    text = "tls:\n  key: |\n    " + block.replace("\n", "\n    ") + "\n  cert_file: /etc/x.crt\n"
    out = redact(text)
    assert not any(line in out for line in lines)
    assert out == "tls:\n  key: |\n    [REDACTED:pem_private_key]\n  cert_file: /etc/x.crt\n"


def test_yaml_next_line_value_only_when_it_is_a_lone_value() -> None:
    """`key:` + next line is a value only if that line holds nothing else; otherwise a mapping."""
    assert redact(f"api_key:\n  {GENERIC}\n") == "api_key:\n  [REDACTED:secret_assignment]\n"
    nested = "password:\n  from_secret: db_password_2\nif token:\n    return None\n"
    assert redact(nested) == nested


# Must come out unchanged: redacting these would damage the memories built from the trace.
ADVERSARIAL_FALSE_POSITIVES = [
    # git SHAs
    "git checkout 3f786850e387550fdab836ed7e6dc881de23001b && git log -1",
    "HEAD is now at 9fceb02 fix: token refresh race",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    # UUIDs
    "trace_id=550e8400-e29b-41d4-a716-446655440000",
    '{"id": "123e4567-e89b-12d3-a456-426614174000", "kind": "job"}',
    # file paths that name secrets
    "/etc/ssl/private/server.key",
    "open('secrets/prod/api_key.txt')",
    "src/auth/password_reset_token.py:88",
    "GOOGLE_APPLICATION_CREDENTIALS=/home/dev/.config/gcloud/creds-2024.json",
    "ssh-keygen -t ed25519 -f ~/.ssh/id_ed25519_work",
    # `password_reset_token` and friends as bare identifiers, no value
    "def send_password_reset_token(user: User) -> None:",
    "user.password_reset_token = generate_token()",
    "password_reset_token: Mapped[str | None] = mapped_column(String(64))",
    "UPDATE users SET password_reset_token = NULL WHERE id = $1",
    "if not user.password_reset_token:",
    "if password:\n    return None\n",
    "token_limit = 4096",
    "max_tokens: 1024",
    "token_type: bearer",
    "tokenizer_name_or_path: sentence-transformers/all-MiniLM-L6-v2",
    "api_key:\n  from_env: OPENAI_API_KEY\n",
    "password:\n  type: string\n  minLength: 12\n",
    # short values (under the 20-character floor of generic key assignments)
    "token=abc123",
    "api_key = 'dev-key-1'",
    "secret: s3cr3t",
    # version strings
    "version: 1.2.3-beta.4+build.567",
    "node v20.11.1 and npm 10.2.4",
    "api_version=2024-02-15-preview",
    '"apiVersion": "apps/v1"',
    "torch==2.13.0+cu121",
    # test verdicts and counters are not passwords
    "--- PASS: TestTokenRefresh (0.00s)",
    "PASS: tests/test_password_hash.py::test_roundtrip",
    '{"pass": 2, "fail": 0, "first_pass": true}',
    "FIRST_PASS=3 bypass=1",
    # URLs and hosts with `@` and `:` but no credentials
    "ssh://git@github.com:22/org/repo.git",
    "http://user@host:8080/path",
    "https://medium.com/@dev/how-we-rotate-tokens-2024",
    "x < y and token_count > 3",
    # Hydra overrides name config packages with `@`: memeval prints them as fixes
    "leave it out with ~system@experiment.systems.memledger)",
    "python -m memeval run system@experiment.systems.memledger=memledger",
]


# --- tokens split by a line break --------------------------------------------------------------


@pytest.mark.parametrize("cut", [8, 12, 22, 36])
@pytest.mark.parametrize("join", ["\n", "\r\n", "\n    ", "\n> "])
def test_a_token_split_by_a_line_break_is_redacted_whole(cut: int, join: str) -> None:
    text = f"my token is {GITHUB_PAT_CLASSIC[:cut]}{join}{GITHUB_PAT_CLASSIC[cut:]} for CI"
    out, counts = DEFAULT_REDACTOR.redact_with_counts(text)
    assert out == "my token is [REDACTED:github_token] for CI"
    assert counts == {"github_token": 1}


@pytest.mark.parametrize("cut", [4, 39])
def test_a_token_split_near_its_end_leaves_no_random_part(cut: int) -> None:
    """Pieces too short to join (under 8 before the break, 4 after) are harmless alone, and the
    rest is redacted (as random, or after its keyword)."""
    out = redact(f"my token is {GITHUB_PAT_CLASSIC[:cut]}\n{GITHUB_PAT_CLASSIC[cut:]} for CI")
    assert out.count("[REDACTED:") == 1
    token = GITHUB_PAT_CLASSIC
    assert not any(token[i : i + 8] in out for i in range(len(token) - 7)), out


def test_a_key_wrapped_over_several_lines_is_redacted_whole() -> None:
    wrapped = "\n".join(ANTHROPIC_KEY[i : i + 30] for i in range(0, len(ANTHROPIC_KEY), 30))
    out, counts = DEFAULT_REDACTOR.redact_with_counts(f"key:\n{wrapped}\nnext step: deploy")
    assert out == "key:\n[REDACTED:anthropic_key]\nnext step: deploy"
    assert counts == {"anthropic_key": 1}


def test_wrapped_base64_holding_a_secret_is_redacted_whole() -> None:
    encoded = base64.b64encode(f"[default]\naws_secret_access_key = {AWS_SECRET}\n".encode())
    lines = re.findall(".{1,16}", encoded.decode())  # the secret straddles several lines
    out, counts = DEFAULT_REDACTOR.redact_with_counts("\n".join(["creds:", *lines, "done"]))
    assert out == "creds:\n[REDACTED:base64_secret]\ndone"
    assert counts == {"base64_secret": 1}


def test_a_whole_secret_at_a_line_end_does_not_swallow_the_next_line() -> None:
    """The first piece is a whole secret of the class the join finds: the join is not used."""
    text = f"DB_PASSWORD=Zq9x1\nDB_HOST=localhost\ntoken {GITHUB_PAT_CLASSIC}\nThen2 we ran"
    assert redact(text) == ("DB_PASSWORD=[REDACTED:password_assignment]\nDB_HOST=localhost\n"
                            "token [REDACTED:github_token]\nThen2 we ran")


SPLIT_FALSE_POSITIVES = [
    "    return self.session_factory2\n    handler_name = 'x'\n",
    "abcdefgh12\nijkl\n",
    "Title With Words2024\n===================\n",
    "src/components/Button2\nsrc/components/Card3\n",
]


@pytest.mark.parametrize("text", SPLIT_FALSE_POSITIVES)
def test_lines_that_only_look_joinable_are_kept(text: str) -> None:
    assert DEFAULT_REDACTOR.redact_with_counts(text) == (text, {})


# --- tokens without a key name -----------------------------------------------------------------


@pytest.mark.parametrize("n", [20, 24, 32, 40, 64, 100])
def test_random_tokens_of_every_length_look_random(n: int) -> None:
    rng = random.Random(n)
    keys = ["".join(rng.choice(B64) for _ in range(n)) for _ in range(400)]
    missed = sum(not looks_random(k) for k in keys)
    assert missed <= {20: 40, 24: 24}.get(n, 4), missed  # ≤10%, 6%, 1% (measured: 5%, 3%, 0.3%)


@pytest.mark.parametrize("token", [
    "NSMergeByPropertyObjectTrumpMergePolicy",  # camelCase words, no digit
    "S3ToWarehouseOperator",  # camelCase words with a digit
    "kenth56-OMEN-by-HP-Gaming-Laptop-16-wf0xxx",  # a host name
    "HTTPCode_ELB_502_Count",  # words between separators
    "ForkJoinPool-1-worker-2",
    "src/Components/Button2/index",  # a path
    "3f786850e387550fdab836ed7e6dc881de23001b",  # a git SHA
    "550E8400-E29B-41D4-A716-446655440000",  # a UUID, upper case
    "toolu_01o3dpqaZyqT66gPeQwoE7FE",  # API object ids
    "req_01XIcEWd8ZakyU1kz1ZbWOHC",
    "sha512-" + fake(B64, 86) + "==",  # Subresource Integrity hash
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
])
def test_names_and_hashes_do_not_look_random(token: str) -> None:
    assert not looks_random(token)


@pytest.mark.parametrize("n", [24, 32, 40, 64])
def test_random_tokens_of_unreserved_characters_are_redacted_whole(n: int) -> None:
    """`.` and `~` join the pieces (OAuth tokens, PKCE verifiers): the token is judged whole, so
    its short pieces go with it (only a `.` or `~` at either end may stay)."""
    rng = random.Random(n)
    keys = ["".join(rng.choice(ALNUM + "-._~") for _ in range(n)) for _ in range(400)]
    missed = sum(k.strip(".~") in redact(f"use {k} now") for k in keys)
    assert missed <= {24: 24}.get(n, 4), missed  # ≤6%, 1% (measured: 3.5%, 1%, 0.25%, 0%)


def test_decoded_text_reads_base64_of_text_only() -> None:
    assert decoded_text(base64.b64encode(b"hello, plain text here!").decode()) == (
        "hello, plain text here!")
    assert decoded_text(base64.urlsafe_b64encode(b"~~~>>>???~~~>>>???ok").decode().rstrip(
        "=")) == "~~~>>>???~~~>>>???ok"
    assert decoded_text(_random_b64(48)) is None  # random bytes: not text
    assert decoded_text(RANDOM_KEY) is None or looks_random(RANDOM_KEY)
    assert decoded_text("SGVsbG8") is None  # too short to hold a secret


ENTROPY_FALSE_POSITIVES = [
    "Cluster ID: 4mQx7tRZS0yk2o1bVhN83w",  # random, but labelled an id
    '{"requestId": "Zk3Lq8Rt2Vx9Pw4Hy7Nb1Cd"}',
    "trace_id=4mQx7tRZS0yk2o1bVhN83wAbc9",
    "see toolu_01o3dpqaZyqT66gPeQwoE7FE and req_01XIcEWd8ZakyU1kz1ZbWOHC",
    '"integrity": "sha512-' + fake(B64, 86) + '=="',
    "![dot](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)",
    "echo " + base64.b64encode(b"just some plain text, nothing secret in it").decode(),
    "class NSMergeByPropertyObjectTrumpMergePolicy2 handles S3ToWarehouseOperator",
    "kenth56-OMEN-by-HP-Gaming-Laptop-16-wf0xxx:~/vsla$ make",
    "docker pull ghcr.io/org/app@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15",
    "Pass `dtype={'account_id': 'string'}` to `read_csv`",
    "Don't pass `mask_and_scale=False` to `xr.open_dataset`",
    "the password is at least 12 characters long",
    "the token expired; the key is config.yaml; the secret is in vault",
    "password is `${DB_PASSWORD}` from the environment",
    "the API key is missing",
    "reset your password here: https://example.com/reset",
    "machine learning models need a password manager",
    "mysql -u root -p orders",
    "mkdir -p build && ssh -p 2222 host",
    "AccountName=acct;EndpointSuffix=core.windows.net",
    "AC" + fake(HEX, 32),  # a Twilio Account SID names an account
]


# Dotted and tilded words that are not tokens, and base64 of text that is no credential.
JOINED_FALSE_POSITIVES = [
    "see memeval.utils.redact.DEFAULT_REDACTOR and torch.nn.functional.scaled_dot_product",
    "org.springframework.boot.autoconfigure.SpringBootApplication2 failed to start",
    "[ RUN      ] MesherTest.FullRowAtBorderHasNoGap",
    "AWS.S3.ListObjectsV2.Paginator.PageSize",
    "open ~/.cache/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots",
    "C:/PROGRA~1/Microsoft.VisualStudio.Component.VC.Tools.x86.x64/bin",
    "https://docs.python.org/3.12/library/re.html#re.Pattern.finditer",
    "https://github.com/Org/Repo2/blob/main/src/Components/Button2.tsx#L20",
    "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "Microsoft.Extensions.DependencyInjection.Abstractions.8.0.1.nupkg",
    "released v2.14.0-rc.1+build.20240501.abc1234 today",
    "ids 550e8400-e29b-41d4-a716-446655440000 and 1C8C7EBF-C62E-4534-A220-1854AF3F921A",
    "at 3f786850e387550fdab836ed7e6dc881de23001b.",
    "Screenshot_2024-05-01_at_10.23.45.png and backup~2024-05-01.tar.gz",
    "vsla_benchmark_13thGeni9-13900HX_RTX4060GPU_15GB_20250716_140525.md",
    "report.2024-05-01T10.23.45Z.final~v2.json and images/Logo.Dark~Theme.2x.png",
    "kenth56-OMEN-by-HP-Gaming-Laptop-16-wf0xxx.local:~/vsla$ make",
    "ip-10-0-1-23.ec2.internal and d1a2b3c4d5e6f7.cloudfront.net",
    "the file is src/memeval/utils/redact.py~ (an editor backup)",
    "Basic HTTP auth; Basic Auth; basic setup; BASIC mode",
    "a SendGrid key looks like SG.aB1cD2eF3gH4iJ5k.REDACTED in the docs",
    *("echo " + base64.b64encode(text.encode()).decode() for text in (
        "hello world, this is plain text", "Content-Type:text/plain", "localhost:8080/health/ready",
        "username:password_here", "sha256:" + "ab" * 20, "2024-05-01T10:23:45Z",
        "arn:aws:iam::123456789012:role/Deploy", "https://example.com/a1/b2")),
]


@pytest.mark.parametrize("text", ENTROPY_FALSE_POSITIVES + JOINED_FALSE_POSITIVES)
def test_shapes_near_the_new_detectors_are_kept(text: str) -> None:
    assert DEFAULT_REDACTOR.redact_with_counts(text) == (text, {})


def test_base64_run_is_searched_with_the_same_classes() -> None:
    """Decoded text is redacted by the redactor running: without a class, its base64 stays."""
    encoded = base64.b64encode(f"please write to {EMAIL} today".encode()).decode()
    assert redact(f"x {encoded}") == "x [REDACTED:base64_secret]"
    assert DEFAULT_REDACTOR.without("email").redact(f"x {encoded}") == f"x {encoded}"


# --- stability ---------------------------------------------------------------------------------

ALL_CASE_TEXTS = [text for _, text, _ in CASES]


@pytest.mark.parametrize(
    "text",
    [*ALL_CASE_TEXTS, *(t for _, t, _ in ADVERSARIAL_CASES), pem()[0], pem("", "\\n")[0]],
)
def test_idempotent(text: str) -> None:
    once = redact(text)
    twice, counts = DEFAULT_REDACTOR.redact_with_counts(once)
    assert twice == once
    assert counts == {}, "a redaction marker was matched again"


FALSE_POSITIVES = [
    "token = tokenizer.encode(text)",
    "tokens = tokenizer(batch, max_length=512, truncation=True)",
    "password_field = forms.CharField(widget=forms.PasswordInput)",
    "def get_api_key(self):",
    "    return self._api_key",
    "secret_name: db-creds",
    "secret: db-creds",
    "git clone git@github.com:org/repo.git",
    "remote.origin.url=git@gitlab.example.com:group/sub/project.git",
    "ssh://git@github.com/org/repo.git",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "Merge: 9fceb02 d7a3e5f",
    "request id 550e8400-e29b-41d4-a716-446655440000",
    "see /home/dev/project/src/memeval/utils/redact.py:42",
    r"C:\Users\dev\AppData\Local\secret_store\tokens.json",
    "numpy==1.26.4, torch 2.13.0+cu121, version v3.11.7-rc1",
    "def login(user: str, password: str) -> None:",
    "password: Optional[str] = None",
    "password = getpass.getpass()",
    "password = request.form['password']",
    "password=password",
    "the password DB_PASSWORD is read from the vault",
    "docker login --password-stdin < token.txt",
    "self.password = password",
    "user.set_password(password=new_password)",
    "auth:\n  password:\n    from_secret: db_password_ref\n",
    "token:\n  valueFrom: secretKeyRef1234567890abcdef\n",
    "if password == expected:",
    "pad_token = self.tokenizer.eos_token",
    "next_token = model.generate_next_token_from_logits_v2(x)",
    "api_key = os.environ['OPENAI_API_KEY']",
    "api_key = os.environ.get('OPENAI_API_KEY')",
    "api_key = settings.openai_api_key",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    'GITHUB_TOKEN: "${GITHUB_TOKEN_FROM_THE_ENVIRONMENT}"',
    "private_key_path: ~/.ssh/id_ed25519_deploy_2024",
    "max_new_tokens=2048, temperature=0.2",
    "Bearer tokens are sent in the Authorization header.",
    "Authorization: see the docs",
    "use std::token::Token;",
    "img src=logo@2x.png",
    "npm install lodash@4.17.21 @types/node@20.11.5",
    "@app.route('/login', methods=['POST'])",
    "user@localhost",
    "PWD=/home/dev/project",
    "docker run -u 1000:1000 image",
    "scikit-learn and risk-assessment-module-for-2024-release",
    "the sk- prefix marks OpenAI keys",
    "Basic authentication uses base64",
    "cache key: a3f1c2",
    "postgres://db.internal:5432/app",
    "http://[::1]:8080/path",
    "The password is stored hashed; tokens expire after 1h.",
    "echo $HOME && cd ~/src && ls -la",
    "",
]


@pytest.mark.parametrize("text", FALSE_POSITIVES + ADVERSARIAL_FALSE_POSITIVES)
def test_ordinary_code_and_prose_is_unchanged(text: str) -> None:
    out, counts = DEFAULT_REDACTOR.redact_with_counts(text)
    assert out == text
    assert counts == {}


# --- linear time -------------------------------------------------------------------------------

TWO_MB = 2_000_000
# Generous for a slow, shared machine: a safety net against catastrophic backtracking (which
# would take minutes or hours), not a benchmark.
TIME_LIMIT_S = 10.0


def _random_b64(n_bytes: int) -> str:
    return base64.b64encode(random.Random(7).randbytes(n_bytes)).decode()


ADVERSARIAL: dict[str, Callable[[], str]] = {
    "a=": lambda: "a=" * (TWO_MB // 2),
    "aaaa": lambda: "a" * TWO_MB,
    "base64": lambda: _random_b64(TWO_MB * 3 // 4),
    "base64_lines": lambda: re.sub("(.{64})", "\\1\n", _random_b64(TWO_MB * 3 // 4)),
    "token=": lambda: "token=" * (TWO_MB // 6),
    'token="': lambda: 'token="' * (TWO_MB // 7),
    'password: "a a': lambda: 'password: "' + "a " * (TWO_MB // 2),
    "pem_headers": lambda: "-----BEGIN RSA PRIVATE KEY-----\n" * (TWO_MB // 32),
    "pem_no_end": lambda: "-----BEGIN PRIVATE KEY-----\n" + "QUJD\n" * (TWO_MB // 5),
    "scheme": lambda: "a://b:c" * (TWO_MB // 7),
    "at": lambda: "a.b@" * (TWO_MB // 4),
    "eyJ": lambda: "eyJaaaaaaaaa." * (TWO_MB // 13),
    "bearer": lambda: "Bearer " * (TWO_MB // 7),
    "--token": lambda: "--token " * (TWO_MB // 8),
    "unicode": lambda: "é" * TWO_MB,
    "escaped_quotes": lambda: '\\\\\\\"token\\\\\\\": ' * (TWO_MB // 16),
    "yaml_next_line": lambda: "password:\n  a\n" * (TWO_MB // 16),
    "xml": lambda: "<token>" * (TWO_MB // 7),
    "uri_at": lambda: "a://b:" + "@" * TWO_MB,
    "pem_quoted": lambda: "-----BEGIN PRIVATE KEY-----\n" + "> # ;\n" * (TWO_MB // 6),
    "split_lines": lambda: "ghp_abcdefgh1\n" * (TWO_MB // 14),
    "random_words": lambda: " ".join(_random_b64(15) for _ in range(TWO_MB // 21)),
    "keyword_prose": lambda: "the password is a secret token key " * (TWO_MB // 35),
    "netrc": lambda: "machine a login b password " * (TWO_MB // 27),
    "mysql": lambda: "mysql " + "-p" * TWO_MB,
    "sig": lambda: "?sig=" * (TWO_MB // 5),
    "joined": lambda: "aB3." * (TWO_MB // 4),
    "joiners": lambda: "aB3" + ".~" * TWO_MB,  # backtracked over from each of 3 starts
    "joined_words": lambda: " ".join("aB3.cD4~" + _random_b64(12) for _ in range(TWO_MB // 30)),
    "basic": lambda: "Basic " * (TWO_MB // 6),
    "basic_b64": lambda: "Basic " + "QUJD" * (TWO_MB // 4) + "-",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_no_catastrophic_backtracking_on_2mb_inputs(name: str) -> None:
    text = ADVERSARIAL[name]()
    start = time.perf_counter()
    redact(text)
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_LIMIT_S, f"{name}: {elapsed:.1f}s"


def test_large_realistic_text_keeps_every_secret_redacted() -> None:
    filler = "def f(x):\n    return x + 1  # ordinary code\n" * 20_000
    text = filler + f"api_key={GENERIC}\n" + filler + f"{EMAIL}\n"
    out, counts = DEFAULT_REDACTOR.redact_with_counts(text)
    assert counts == {"secret_assignment": 1, "email": 1}
    assert GENERIC not in out and EMAIL not in out


# --- the Redactor API --------------------------------------------------------------------------


def test_module_redact_uses_default_redactor() -> None:
    text = f"{EMAIL} {AWS_KEY_ID}"
    assert (
        redact(text)
        == DEFAULT_REDACTOR.redact(text)
        == ("[REDACTED:email] [REDACTED:aws_access_key_id]")
    )


def test_counts_only_list_classes_seen() -> None:
    assert DEFAULT_REDACTOR.redact_with_counts("nothing here") == ("nothing here", {})


def test_default_order_puts_broad_patterns_last() -> None:
    names = DEFAULT_REDACTOR.names()
    assert names[0] == "pem_private_key"
    assert names.index("uri_credentials") < names.index("email")
    assert names.index("uri_credentials") < names.index("secret_assignment")
    assert names.index("github_token") < names.index("secret_assignment")
    assert names[-1] == "email"
    assert names == [p.name for p in DEFAULT_PATTERNS]


def test_custom_pattern_and_without() -> None:
    ticket = RedactionPattern("internal_ticket", re.compile(r"SEC-\d{4,}"), hints=("sec-",))
    redactor = Redactor([*DEFAULT_PATTERNS, ticket])
    out, counts = redactor.redact_with_counts(f"see SEC-12345 from {EMAIL}")
    assert out == "see [REDACTED:internal_ticket] from [REDACTED:email]"
    assert counts == {"internal_ticket": 1, "email": 1}
    no_email = redactor.without("email")
    assert no_email.redact(f"mail {EMAIL}") == f"mail {EMAIL}"
    assert "email" not in no_email.patterns
    with pytest.raises(KeyError):
        redactor.without("nope")


def test_secret_group_limits_what_is_replaced() -> None:
    pattern = RedactionPattern("pin", re.compile(r"PIN (?P<secret>\d{4})"))
    assert Redactor([pattern]).redact("PIN 1234 ok") == "PIN [REDACTED:pin] ok"


def test_registration_errors() -> None:
    pattern = RedactionPattern("pin", re.compile(r"\d{4}"))
    with pytest.raises(ValueError, match="twice"):
        Redactor([pattern, pattern])
    with pytest.raises(ValueError, match="snake_case"):
        RedactionPattern("Bad Name", re.compile("x"))
