"""Secret and PII redaction for coding-agent traces.

Traces hold API keys, connection strings and e-mail addresses. Every path that moves trace text
out of memeval (LLM judge, reports, rejection store, Phoenix, logs) calls `redact` first, so one
module decides what counts as a secret.

Each secret becomes `[REDACTED:<class>]`. Only the secret span is replaced: key names, URI schemes
and hosts, header names and quotes stay, so a judge still sees that *a* token was configured.

Order matters, and `DEFAULT_PATTERNS` is applied top to bottom:

1. PEM blocks first: they span many lines and contain base64 that narrower patterns would only
   partly match, leaving most of the key behind.
2. URIs with `user:pass@` before e-mail and assignments: otherwise `pass@db.example.com` is taken
   for an e-mail address and the user name and scheme context are lost.
3. Vendor token formats (AWS, GitHub, Slack, Stripe, OpenAI, Anthropic, JWT, ssh) before the
   generic `key = value` rules, so the label says *what* leaked (`api_key=[REDACTED:github_token]`)
   and the generic rule then sees an already-redacted value and leaves it alone.
4. Generic assignments, then passwords, then e-mail last (the broadest shape).

Generic assignments are found in the shapes traces carry them: `KEY=v`, `KEY: v`, `KEY => v`,
`--key v`, JSON and dict entries (quotes escaped up to three times, for JSON inside JSON), Python
triple quotes, a YAML value on the next line (`key: |`), `<key>v</key>`; the key may end in a short
suffix (`SECRET_KEY_BASE`, `API_KEY_PROD`, `DB_PASS`).

Every regex is linear-time on hostile input: no nested ambiguous quantifiers, unbounded runs only
over classes that cannot contain the pattern's own start or end marker, everything else bounded.
A pattern whose literal hints are absent from the text is not run at all. Replacement markers
match none of the patterns, so redaction is idempotent (a second pass counts nothing).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

Accept = Callable[[re.Match[str]], bool]
"""Second-stage check on a regex match; returning False keeps the text (code, not a secret)."""


@dataclass(frozen=True)
class RedactionPattern:
    """One secret class: what to find, and what the secret span becomes.

    Only the span of the first participating group whose name starts with `secret` is replaced
    (the whole match if the regex has no such group), so surrounding context survives.
    `hints` are casefolded substrings one of which every match contains: a pattern whose hints are
    all absent is skipped, which keeps large texts cheap (a regex scan costs ~0.1 s per 2 MB).
    """

    name: str
    regex: re.Pattern[str]
    accept: Accept | None = None
    replacement: str = ""
    hints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"redaction class name {self.name!r} must be snake_case")
        if not self.replacement:
            object.__setattr__(self, "replacement", f"[REDACTED:{self.name}]")


class Redactor:
    """Applies an ordered set of named patterns; order is the registration order."""

    def __init__(self, patterns: Iterable[RedactionPattern]) -> None:
        self._patterns: dict[str, RedactionPattern] = {}
        for pattern in patterns:
            if pattern.name in self._patterns:
                raise ValueError(f"redaction class {pattern.name!r} is registered twice")
            self._patterns[pattern.name] = pattern

    @property
    def patterns(self) -> Mapping[str, RedactionPattern]:
        """Read-only view, in application order."""
        return dict(self._patterns)

    def names(self) -> list[str]:
        return list(self._patterns)

    def without(self, *names: str) -> Redactor:
        """A copy minus some classes (e.g. keep e-mails for an internal-only report)."""
        unknown = set(names) - set(self._patterns)
        if unknown:
            raise KeyError(f"unknown redaction classes: {sorted(unknown)}")
        return Redactor(p for n, p in self._patterns.items() if n not in names)

    def redact(self, text: str) -> str:
        return self.redact_with_counts(text)[0]

    def redact_with_counts(self, text: str) -> tuple[str, dict[str, int]]:
        """Redacted text and how many secrets of each class were replaced (only classes seen)."""
        counts: dict[str, int] = {}
        # Hints are checked against the input: markers never create a new match (idempotence).
        folded = text.casefold()
        for pattern in self._patterns.values():
            if pattern.hints and not any(h in folded for h in pattern.hints):
                continue
            text, n = _apply(pattern, text)
            if n:
                counts[pattern.name] = n
        return text, counts


def _apply(pattern: RedactionPattern, text: str) -> tuple[str, int]:
    replaced = 0

    def substitute(m: re.Match[str]) -> str:
        nonlocal replaced
        if pattern.accept is not None and not pattern.accept(m):
            return m.group(0)
        replaced += 1
        start, end = _secret_span(m)
        base = m.start()
        whole = m.group(0)
        return whole[: start - base] + pattern.replacement + whole[end - base :]

    return pattern.regex.sub(substitute, text), replaced


def _secret_span(m: re.Match[str]) -> tuple[int, int]:
    for name in m.re.groupindex:
        if name.startswith("secret") and m.start(name) != -1:
            return m.span(name)
    return m.span()


def _secret_value(m: re.Match[str]) -> tuple[str, str | None]:
    """The matched secret text and the name of the group that holds it."""
    for name in m.re.groupindex:
        if name.startswith("secret") and m.start(name) != -1:
            return m.group(name), name
    return m.group(0), None


# --- heuristics that tell code from secrets --------------------------------------------------

_CODE_WORDS = frozenset(
    {
        "str", "string", "bytes", "none", "null", "nil", "true", "false", "undefined",
        "optional", "secretstr", "int", "any", "text", "char", "varchar", "object",
    }
)  # fmt: skip
_DOTTED_CODE = re.compile(r"[A-Za-z_]+(?:\.[A-Za-z_][A-Za-z0-9_]{0,39})+")
_TEMPLATE_PREFIXES = ("$", "{{", "%(", "<")
_PASSWORD_VARIABLE = re.compile(r"[a-z_]*(?:password|passwd|passphrase|pwd)", re.IGNORECASE)


_KEY_TAIL = re.compile(r"[\w.\-]{0,64}$")


def _key_start(m: re.Match[str]) -> int:
    """Where the whole key (`DB_PASSWORD`) starts: the regex is anchored on its keyword."""
    start = m.start("kw")
    head = _KEY_TAIL.search(m.string, max(0, start - 64), start)
    return head.start() if head else start


def _key_name(m: re.Match[str]) -> str:
    if m.group("kw") is None:
        return m.group("flag")  # `--db-password VALUE`: the flag matched whole
    return m.string[_key_start(m) : m.end("kw")]


def _next_char(m: re.Match[str]) -> str:
    return m.string[m.end() : m.end() + 1]


def _looks_like_code(value: str, m: re.Match[str]) -> bool:
    """A call, subscript, attribute chain or type name: `token = tokenizer.encode(text)`."""
    return (
        _next_char(m) in ("(", "[")
        or value.lower() in _CODE_WORDS
        or _DOTTED_CODE.fullmatch(value) is not None
        or value.startswith(_TEMPLATE_PREFIXES)
    )


def _looks_random(value: str) -> bool:
    """Real keys carry digits (or are long mixed-case runs); identifiers mostly don't."""
    if any(c.isdigit() for c in value):
        return True
    return len(value) >= 32 and "." not in value and value.lower() != value != value.upper()


def _layout_ok(m: re.Match[str], value: str) -> bool:
    """The shape around a value seen only after matching: YAML next-line and XML element forms.

    `key:` + indented next line counts only when that line is the value alone and carries a digit
    (`if password:` + `    return` is code); `<key>value` only inside `<key>…</`.
    """
    if m.group("block") is not None:
        line_end = m.string.find("\n", m.end())
        rest = m.string[m.end() : line_end if line_end != -1 else len(m.string)]
        return not rest.strip() and any(c.isdigit() for c in value)
    if m.group("xml") is not None:
        start = _key_start(m)
        return m.string[start - 1 : start] == "<" and m.string.startswith("</", m.end())
    return True


def _accept_secret_assignment(m: re.Match[str]) -> bool:
    value, group = _secret_value(m)
    if value.startswith(_TEMPLATE_PREFIXES):
        return False  # `${GITHUB_TOKEN}` / `{{ secrets.X }}`: a reference, not the secret
    if m.group("kw") is not None and not _layout_ok(m, value):
        return False
    if group != "secret_bare":
        return True  # a quoted literal assigned to a secret-named key
    if value.startswith(("/", "~", ".")):
        return False  # `private_key: ~/.ssh/id_rsa_deploy_2`: a path
    return not _looks_like_code(value, m) and _looks_random(value)


def _accept_password(m: re.Match[str]) -> bool:
    value, group = _secret_value(m)
    if value.startswith(_TEMPLATE_PREFIXES) or set(value) <= {"*"}:
        return False  # a reference or an already-masked value
    if m.group("kw") is not None and not _layout_ok(m, value):
        return False
    key = _key_name(m).lower()
    if _PASS_KEY.search(key) and (value.isdigit() or value.lower() in _CODE_WORDS):
        return False  # `DB_PASS=…` is a password, `"pass": 2` / `FIRST_PASS=true` a counter/flag
    if group != "secret_bare":
        return True
    if key.endswith("pwd") and value.startswith(("/", "~")):
        return False  # `PWD=/home/dev/project` in an env dump is a directory
    if _PASSWORD_VARIABLE.fullmatch(value):
        return False  # `password=new_password`, `self.password = password`: a variable
    return not (_looks_like_code(value, m) or value.lower() == key)


def _accept_openai(m: re.Match[str]) -> bool:
    return any(c.isdigit() for c in m.group(0))  # `sk-some-long-kebab-slug` is not a key


def _accept_authorization(m: re.Match[str]) -> bool:
    value, _ = _secret_value(m)
    return m.group("scheme") is not None or any(c.isdigit() for c in value)


def _accept_basic_auth(m: re.Match[str]) -> bool:
    value, _ = _secret_value(m)
    user = m.group("user")
    if user.isdigit() and value.isdigit():
        return False  # `docker run -u 1000:1000` is uid:gid
    return not value.startswith(_TEMPLATE_PREFIXES)


_FILE_EXTENSIONS = frozenset(
    {
        "png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "bmp", "tif", "tiff", "pdf", "js", "mjs",
        "cjs", "ts", "tsx", "jsx", "css", "scss", "map", "json", "yaml", "yml", "toml", "lock",
        "txt", "md", "html", "py", "rb", "rs", "java", "kt", "swift", "whl", "gz", "zip", "tar",
    }
)  # fmt: skip


def _accept_email(m: re.Match[str]) -> bool:
    tld = m.group(0).rsplit(".", 1)[-1].lower()
    return tld not in _FILE_EXTENSIONS  # `logo@2x.png` is a file name


# --- the patterns ----------------------------------------------------------------------------

# Shared pieces. Generic rules start at the keyword itself (`token`, `password`), not at the start
# of the key: a regex that begins with a literal is skipped through quickly, while one that begins
# with a look-behind is tried at every offset. Any `[\w.-]` prefix (`GITHUB_`, `db.`) is allowed,
# which is what a key-start anchor would have allowed too. `_SEP` covers `=`, `:`, `=>`, `:=` and
# rejects `==` and `::` (and takes the full-width `：`/`＝` of CJK prose); it never crosses a line
# break. The one form that does is `_BLOCK`, a YAML value on the next line, and it counts only when
# that line is a lone value (`_layout_ok`), so a `password:` whose value is a nested mapping keeps
# it. `_Q` is an optional (possibly JSON-escaped) quote around a key or value.
_ESC = r"\\{0,7}"  # JSON escaping of a quote: `\"` once, `\\\"` twice, up to three levels
_Q = _ESC + r"""["'`]?"""
_SEP = r"[ \t]*(?:=>|:=|[=＝](?![=＝])|[:：](?![:：]))[ \t]*"
# YAML: the value on the next, indented line, after `key:` or a block scalar `key: |` / `key: >-`.
_BLOCK = r"[ \t]*:[ \t]*(?:[|>][-+]?[1-9]?[ \t]*)?\r?\n[ \t]+"
# `<key>value</key>` (Maven settings.xml, .NET config): checked in `_layout_ok`.
_XML = r">"
_NOT_REDACTED = r"(?!\[REDACTED:)"

# A short suffix after the keyword still names the same secret: `SECRET_KEY_BASE`, `API_KEY_PROD`,
# `GITHUB_TOKEN_2`, `token_value`. A closed list: `tokenizer_name`, `secret_name` and
# `token_type` are not secrets.
_KEY_SUFFIX = (
    r"(?:[_.\-]?(?i:base|value|val|prod|production|dev|staging|live|test|old|new|primary"
    r"|secondary|v?[0-9]{1,2})(?![A-Za-z0-9]))?"
)
# Alternatives share their first letter where they can: tried at every offset, this is the hot
# part of redaction.
_SECRET_KEYWORDS = (
    r"(?i:a(?:pi[_-]?key|ccess[_-]?key|uth[_-]?key)|secret(?:[_-]?key)?|private[_-]?key"
    r"|token|bearer)"
)
# `pass` only as the last part of a longer key (`DB_PASS`, `smtp.pass`): alone it is a test
# verdict (`--- PASS: TestFoo`) or a counter.
_PASSWORD_KEYWORDS = r"(?i:p(?:ass(?:word|wd|phrase|code|(?<=[_.\-]pass)(?![a-z]))|wd))"
_PASS_KEY = re.compile("pass" + _KEY_SUFFIX + "$")  # a lowercased key that ends in bare `pass`


def _quoted(min_len: int, name: str, *, spaces: bool) -> str:
    """Alternatives for a value in double, single or back quotes (optionally JSON-escaped)."""
    ws = r"\r\n" if spaces else r"\s"
    alts = []
    for i, q in enumerate(('"', "'", "`")):
        body = rf"[^{q}{ws}\\]{{{min_len},}}"
        # `{q}{q}{q}` opens a Python triple-quoted string; the body stops at the first closing quote
        alts.append(rf"{_ESC}{q}(?:{q}{q})?{_NOT_REDACTED}(?P<{name}_{i}>{body}){_ESC}{q}")
    return "|".join(alts)


_PEM_HEAD = r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_TAIL = r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
# Complete block: body chars may not contain `--`, so a scan stops at the next marker.
# `>#*;` let a key quoted in Markdown (`> `) or commented out (`# `, ` * `, `; `) match whole.
_PEM_BODY = r"""(?:[A-Za-z0-9+/=\s\\:,."'>#*;]|-(?!-))*"""
# Truncated block (no END marker): only whole base64 or `Header: value` lines after line breaks,
# so prose after a cut-off key is not swallowed.
_PEM_LINES = (
    r"(?:(?:[ \t]*(?:\r?\n|\\r?\\n))+[ \t]*(?:[>#*;]+[ \t]*)?"
    r"(?:[A-Za-z0-9+/=]+|[A-Za-z][A-Za-z-]*:[^\r\n\\\"']*))*"
)

_TOKEN_VALUE = r"[A-Za-z0-9\-._~+/]"
_EMAIL_LOCAL = r"[\w.%+\-]{1,64}"
_EMAIL_DOMAIN = r"(?:[\w\-]{1,63}\.){1,8}[^\W\d_]{2,24}"


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("".join(parts))


DEFAULT_PATTERNS: tuple[RedactionPattern, ...] = (
    RedactionPattern(
        "pem_private_key",
        _rx(_PEM_HEAD, "(?:", _PEM_BODY, _PEM_TAIL, "|", _PEM_LINES, ")"),
        hints=("-----begin",),
    ),
    RedactionPattern(
        "uri_credentials",
        _rx(
            r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}://", _NOT_REDACTED,
            # `@` may sit inside the user (`admin@server` on Azure) and, unencoded, inside the
            # password: the user ends at the first `:`, the password at the authority's last `@`.
            r"""(?P<secret>[^\s:/?#\[\]"'<>\\]{0,256}:[^\s/?#"'<>\\]{1,256})@""",
        ),
        hints=("://",),
    ),
    RedactionPattern(
        "slack_webhook",
        _rx(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/",
            r"(?P<secret>[A-Za-z0-9/_\-]{20,})",
        ),
        hints=("hooks.slack.com",),
    ),
    RedactionPattern(
        "aws_access_key_id",
        _rx(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        hints=("akia", "asia"),
    ),
    RedactionPattern(
        "aws_secret_access_key",
        _rx(
            r"(?<![A-Za-z0-9])(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)",
            # also `aws configure set aws_secret_access_key VALUE` (space-separated)
            _Q, "(?:", _SEP, r"|[ \t]+)", _Q, r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        ),
        hints=("secret",),
    ),
    RedactionPattern(
        "github_token",
        _rx(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    RedactionPattern(
        "slack_token",
        _rx(r"(?<![A-Za-z0-9])(?:xox[abeoprs]|xapp)-[A-Za-z0-9\-]{10,}"),
        hints=("xox", "xapp-"),
    ),
    RedactionPattern(
        "stripe_key",
        _rx(r"(?<![A-Za-z0-9_])(?:(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}|whsec_[0-9A-Za-z]{20,})"),
        hints=("k_live_", "k_test_", "whsec_"),
    ),
    RedactionPattern(
        "ssh_key",
        _rx(
            r"(?<![A-Za-z0-9])(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp(?:256|384|521)",
            r"|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)[ \t]+",
            r"(?P<secret>AAAA[A-Za-z0-9+/]{20,}={0,3})",
        ),
        hints=("ssh-", "ecdsa-"),
    ),
    RedactionPattern(
        "anthropic_key",
        _rx(r"(?<![A-Za-z0-9_\-])sk-ant-[A-Za-z0-9_\-]{20,}"),
        hints=("sk-ant-",),
    ),
    RedactionPattern(
        "openai_key",
        _rx(r"(?<![A-Za-z0-9_\-])sk-[A-Za-z0-9_\-]{20,}"),
        accept=_accept_openai,
        hints=("sk-",),
    ),
    RedactionPattern(
        "google_api_key",
        _rx(r"(?<![A-Za-z0-9_\-])AIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])"),
        hints=("aiza",),
    ),
    RedactionPattern(
        "huggingface_token",
        _rx(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{34,}"),
        hints=("hf_",),
    ),
    RedactionPattern(
        "jwt",
        _rx(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]*"),
        hints=("eyj",),
    ),
    RedactionPattern(
        "authorization_header",
        _rx(
            r"(?i:authorization)", _Q, r"[ \t]*[:=][ \t]*", _Q,
            r"(?:(?P<scheme>(?i:bearer|basic|token|bot))[ \t]+)?", _NOT_REDACTED,
            rf"(?P<secret>{_TOKEN_VALUE}{{8,}}=*)",
            r"|(?i:bearer)[ \t]+", _NOT_REDACTED, rf"(?P<secret_bare>{_TOKEN_VALUE}{{20,}}=*)",
        ),
        accept=_accept_authorization,
        hints=("authorization", "bearer"),
    ),
    RedactionPattern(
        "basic_auth",
        _rx(
            r"""(?<!\S)(?:-u|--user)(?:[ \t]+|=)\\?["']?(?P<user>[^\s:"'\\]{1,128}):""",
            _NOT_REDACTED, r"""(?P<secret>[^\s"'\\]{1,256})""",
        ),
        accept=_accept_basic_auth,
        hints=("-u",),
    ),
    RedactionPattern(
        "secret_assignment",
        _rx(
            # `--api-key VALUE` (space-separated CLI flag) or `KEY = VALUE` in any syntax.
            r"(?:(?P<flag>--[A-Za-z0-9\-]{0,64}?", _SECRET_KEYWORDS, r")[ \t]+",
            r"|(?P<kw>", _SECRET_KEYWORDS, _KEY_SUFFIX, ")",
            "(?:(?P<xml>", _XML, ")|", _Q, "(?:(?P<block>", _BLOCK, ")|", _SEP, ")))",
            "(?:", _quoted(20, "secret_q", spaces=False),
            r"|(?P<secret_bare>[A-Za-z0-9_\-./+~]{20,}={0,3}))",
        ),
        accept=_accept_secret_assignment,
        hints=("key", "token", "bearer", "secret"),
    ),
    RedactionPattern(
        "password_assignment",
        _rx(
            # `--db-password VALUE` (space-separated CLI flag) or `KEY = VALUE` in any syntax.
            r"(?:(?P<flag>--[A-Za-z0-9\-]{0,64}?", _PASSWORD_KEYWORDS, r")[ \t]+",
            r"|(?P<kw>", _PASSWORD_KEYWORDS, _KEY_SUFFIX, ")",
            "(?:(?P<xml>", _XML, ")|", _Q, "(?:(?P<block>", _BLOCK, ")|", _SEP, ")))",
            "(?:", _quoted(1, "secret_q", spaces=True),
            "|", _NOT_REDACTED, r"""(?P<secret_bare>[^\s"'`,;&(){}\[\]<>\\]{1,256}))""",
        ),
        accept=_accept_password,
        hints=("pass", "pwd"),
    ),
    RedactionPattern(
        "email",
        # `git@host:org/repo.git` is an SSH remote, not a person: keep it so traces stay readable.
        _rx(r"(?<![\w.%+\-])(?!git@)", _EMAIL_LOCAL, "@", _EMAIL_DOMAIN, r"(?![\w\-])"),
        accept=_accept_email,
        hints=("@",),
    ),
)

DEFAULT_REDACTOR = Redactor(DEFAULT_PATTERNS)


def redact(text: str) -> str:
    """Redact with the default patterns; the one call every outbound path should make."""
    return DEFAULT_REDACTOR.redact(text)
