"""Secret and PII redaction for coding-agent traces.

Traces hold API keys, connection strings and e-mail addresses. Every path that moves trace text
out of memeval (LLM judge, reports, rejection store, Phoenix, logs, the run's own records of its
configuration) calls `redact` first, so one module decides what counts as a secret.

Each secret becomes `[REDACTED:<class>]`. Only the secret span is replaced: key names, URI schemes
and hosts, header names and quotes stay, so a judge still sees that *a* token was configured.

Order matters, and `DEFAULT_PATTERNS` is applied top to bottom:

1. PEM blocks first: they span many lines and contain base64 that narrower patterns would only
   partly match, leaving most of the key behind.
2. Tokens a line break split in two (a wrapped terminal line, a pasted key): the pieces are joined
   and the whole redaction is run on the join, so each piece alone, too short to match, is not
   left behind.
3. URIs with `user:pass@` (any scheme) before e-mail and assignments: otherwise
   `pass@db.example.com` is taken for an e-mail address and the user name and scheme are lost.
4. Vendor token formats (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, Anthropic, JWT, ssh, …) and
   vendor-specific shapes (Azure `AccountKey=`, `mysql -pX`, `.netrc`, `Basic` + base64 of
   `user:pass`) before the generic `key = value` rules, so the label says *what* leaked
   (`api_key=[REDACTED:github_token]`) and the generic rule then sees an already-redacted value
   and leaves it alone.
5. Generic assignments, then passwords, then a secret a few words after a keyword in prose
   ("the db password is X").
6. Runs of base64 that decode to text holding a secret or a `user:password` pair, then any
   remaining long random-looking token (high Shannon entropy, mixed case and digits, not a SHA,
   UUID, path, file name or identifier), also one whose pieces `.` or `~` join.
7. E-mail last (the broadest shape).

Generic assignments are found in the shapes traces carry them: `KEY=v`, `KEY: v`, `KEY => v`,
`--key v`, JSON and dict entries (quotes escaped up to three times, for JSON inside JSON), Python
triple quotes, a YAML value on the next line (`key: |`), `<key>v</key>`; the key may end in a short
suffix (`SECRET_KEY_BASE`, `API_KEY_PROD`, `DB_PASS`).

Every regex is linear-time on hostile input: no nested ambiguous quantifiers, unbounded runs only
over classes that cannot contain the pattern's own start or end marker, everything else bounded.
Cost matters (every entry is redacted): a pattern whose literal hints are absent from the text is
not run at all; a vendor prefix is written literal first, its look-behind after it
(`npm_(?<![…]npm_)…`), so the engine jumps from one `npm_` to the next instead of trying a
look-behind at every offset; a pattern that starts with a case-insensitive key name is tried only
where the name occurs (`anchors`); the entropy and base64 detectors look only at
whitespace-separated words of 20 characters or more, which `str.split` finds faster than a regex.
Replacement markers match none of the detectors, so redaction is idempotent (a second pass counts
nothing).
"""

from __future__ import annotations

import base64
import binascii
import heapq
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from memeval.utils.text_memo import TextMemo

Accept = Callable[[re.Match[str]], bool]
"""Second-stage check on a regex match; returning False keeps the text (code, not a secret)."""


class Detector(Protocol):
    """A way of finding secrets. `apply` returns the text with them replaced and how many of each
    class it replaced; `redactor` is the redactor running it (for detectors that redact a
    transformed copy of the text, such as decoded base64, with the same classes)."""

    @property
    def name(self) -> str: ...

    @property
    def hints(self) -> tuple[str, ...]: ...

    def apply(self, text: str, redactor: Redactor) -> tuple[str, dict[str, int]]: ...


@dataclass(frozen=True)
class RedactionPattern:
    """One secret class: what to find, and what the secret span becomes.

    Only the span of the first participating group whose name starts with `secret` is replaced
    (the whole match if the regex has no such group), so surrounding context survives.
    `hints` are casefolded substrings one of which every match contains: a pattern whose hints are
    all absent is skipped, which keeps large texts cheap (a regex scan costs ~0.1 s per 2 MB).
    `anchors` are lowercase literals every match *starts* with: the regex is then tried only
    where one occurs (found with `str.find`), not at every offset, which makes a pattern whose
    start is a case-insensitive alternation (a key name) several times cheaper.
    """

    name: str
    regex: re.Pattern[str]
    accept: Accept | None = None
    replacement: str = ""
    hints: tuple[str, ...] = ()
    anchors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_name(self.name)
        if not self.replacement:
            object.__setattr__(self, "replacement", _marker(self.name))

    def apply(self, text: str, redactor: Redactor) -> tuple[str, dict[str, int]]:
        text, n = _apply(self, text)
        return text, ({self.name: n} if n else {})


def _check_name(name: str) -> None:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"redaction class name {name!r} must be snake_case")


def _marker(name: str) -> str:
    return f"[REDACTED:{name}]"


class Redactor:
    """Applies an ordered set of named detectors; order is the registration order."""

    def __init__(self, patterns: Iterable[Detector]) -> None:
        self._patterns: dict[str, Detector] = {}
        for pattern in patterns:
            if pattern.name in self._patterns:
                raise ValueError(f"redaction class {pattern.name!r} is registered twice")
            self._patterns[pattern.name] = pattern

    @property
    def patterns(self) -> Mapping[str, Detector]:
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
            text, found = pattern.apply(text, self)
            for name, n in found.items():
                counts[name] = counts.get(name, 0) + n
        return text, counts


def _apply(pattern: RedactionPattern, text: str) -> tuple[str, int]:
    if not pattern.anchors:
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
    spans = [(*_secret_span(m), pattern.replacement) for m in _anchored(pattern, text)
             if pattern.accept is None or pattern.accept(m)]
    return _replace_spans(text, spans), len(spans)


def _anchored(pattern: RedactionPattern, text: str) -> Iterable[re.Match[str]]:
    """The matches `regex.finditer` would give, tried only where an anchor occurs."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lowercase to two: offsets would shift
        yield from pattern.regex.finditer(text)
        return
    end = 0
    for start in sorted({i for anchor in pattern.anchors for i in _find_all(lowered, anchor)}):
        if start >= end and (m := pattern.regex.match(text, start)) is not None:
            yield m
            end = max(m.end(), start + 1)


def _find_all(text: str, sub: str) -> Iterable[int]:
    i = text.find(sub)
    while i != -1:
        yield i
        i = text.find(sub, i + 1)


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


def _replace_spans(text: str, spans: Iterable[tuple[int, int, str]]) -> str:
    """`text` with each (start, end) span replaced; spans must not overlap."""
    out, done = [], 0
    for start, end, replacement in sorted(spans):
        out += [text[done:start], replacement]
        done = end
    out.append(text[done:])
    return "".join(out)


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
    if value.startswith(("/", "~", ".")) and ("/" in value or not looks_random(value)):
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
    value, group = _secret_value(m)
    if group == "secret_b64":  # `Basic <base64>`: a credential once it decodes to `user:pass`
        decoded = _base64_text(value)
        return decoded is not None and _BASIC_PAIR.fullmatch(decoded.rstrip("\r\n")) is not None
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
    if tld in _FILE_EXTENSIONS:
        return False  # `logo@2x.png` is a file name
    # Hydra's `~group@package` (delete) and `group@package=option` overrides name a config
    # package, not a person: memeval's own error messages print them as fixes.
    before = m.string[max(0, m.start() - 2):m.start()]
    deleted = before[-1:] == "~" and (len(before) < 2 or before[0] in _OVERRIDE_LEADS)
    return not deleted and m.string[m.end():m.end() + 1] != "="


_OVERRIDE_LEADS = frozenset(" \t\n([`'\"")  # what may stand before an override's `~`


# `.netrc`: `machine HOST login USER password SECRET` (or `default login …`), on one line or
# several; "machine learning needs a password manager" is prose.
_NETRC_ENTRY = re.compile(r"(?<![\w-])(?:machine[ \t]+\S+|default)\s[\s\S]{0,200}?\blogin[ \t]+\S")


def _accept_netrc(m: re.Match[str]) -> bool:
    return _NETRC_ENTRY.search(m.string, max(0, m.start() - 300), m.start()) is not None


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


# --- tokens without a key name: random-looking, base64-encoded, split by a line break ----------

_TOKEN_CHARS = string.ascii_letters + string.digits + "+/_=-"  # a piece of a split token
# Runs a token may be made of, inside one whitespace-separated word.
_RUN = re.compile(r"[A-Za-z0-9+/_\-]{20,}={0,2}")
# Runs of 20 or more of RFC 3986's unreserved characters (`A-Za-z0-9-._~`, what OAuth tokens and
# PKCE verifiers are made of) that `.` or `~` join: judged whole, as well as run by run. No `/`: a
# path's segments are judged one by one. A joiner neither starts nor ends one (a sentence's full
# stop); a failed match backtracks over trailing joiners only, from at most 19 starts: linear.
_JOINED_RUN = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.~\-]{18,}[A-Za-z0-9_\-]")
# A piece someone already masked (`SG.aB1cD2eF3gH4iJ5k.REDACTED` in docs): what is left of the
# token is an example or an id, and its pieces are judged alone.
_MASKED = re.compile(r"redacted|xxxx", re.IGNORECASE)
_CLASS_RUNS = re.compile(r"[a-z]+|[A-Z]+|[0-9]+|[^A-Za-z0-9]+")
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}")
_PLAIN_PART = re.compile(r"[a-z]+|[A-Z]+|[A-Z][a-z]+|[0-9]+")
_SEPARATORS = re.compile(r"[-_/+.~]+")
_DIGIT = re.compile(r"[0-9]")
# API object ids (Anthropic `toolu_01…`, `req_…`, `msg_…`; OpenAI `chatcmpl-…`, `call_…`; Stripe
# `cus_…`, `pi_…`) name things, they grant nothing.
_OBJECT_ID = re.compile(r"([a-z]{2,12})[_-][A-Za-z0-9]{12,}")
_ID_PREFIXES = frozenset({"toolu", "srvtoolu", "msg", "msgbatch", "req", "chatcmpl", "call",
                          "asst", "thread", "run", "file", "batch", "resp", "cus", "pi", "ch",
                          "evt", "price", "prod", "sub", "acct", "org", "proj", "user"})
_SRI_HASH = re.compile(r"sha(?:1|256|384|512)-")  # Subresource Integrity: a hash, not a key
# `Cluster ID: 4mQx…`, `"requestId": "…"`, `trace_id=…`: random, but an identifier.
_ID_LABEL = re.compile(r"""(?:\b[Ii][Dd]|[a-z]Id|[_-][Ii][Dd])s?["'`]?[ \t]*[:=]?[ \t]*["'`]?$""")
_MIN_RANDOM, _MAX_RANDOM = 20, 200
_MIN_BASE64 = 24  # 18 bytes: the shortest decoded text worth searching
_MAX_BASE64 = 65536
_NON_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")


_C_LOG_C = [0.0] + [c * math.log2(c) for c in range(1, _MAX_RANDOM + 1)]


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character (of a text no longer than `_MAX_RANDOM`)."""
    n = len(text)
    return math.log2(n) - sum(map(_C_LOG_C.__getitem__, Counter(text).values())) / n


@lru_cache(maxsize=4096)
def looks_random(token: str) -> bool:
    """A key rather than a name: mixed case with digits (or long, in one piece), near the
    entropy a random string of its length has, and switching between lower, upper and digits as
    often as random text does. Names fail the last two: `NSMergeByPropertyObjectTrumpMergePolicy`,
    `src/Components/Button2`, `ForkJoinPool-1-worker-2`, `kenth56-OMEN-by-HP-Laptop-16`. A file
    name is judged without its extension.

    Thresholds from simulation: random base62/base64 strings of 20, 24 and 40+ characters pass
    95%, 97% and 99.7% of the time, and so do strings of RFC 3986's unreserved characters
    (`A-Za-z0-9-._~`); every identifier in the bundled corpora fails.
    """
    body = token.rstrip("=")
    stem, dot, extension = body.rpartition(".")
    if dot and extension.lower() in _FILE_EXTENSIONS:
        body = stem  # a file name is judged without its extension
    n = len(body)
    if not _MIN_RANDOM <= n <= _MAX_RANDOM or body.lower() == body or body.upper() == body:
        return False
    if _DIGIT.search(body) is None and (n < 32 or "." in body or "~" in body):
        return False  # no digit: a key only if long and in one piece (not `Test.CaseName`)
    object_id = _OBJECT_ID.fullmatch(body)
    if (object_id and object_id.group(1) in _ID_PREFIXES) or _SRI_HASH.match(body):
        return False
    if (len(_CLASS_RUNS.findall(body)) - 1) / (n - 1) < 0.35:
        return False  # camelCase words: few switches between lower, upper and digits
    if sum(map(len, _WORDISH.findall(body))) >= 0.6 * n:
        return False  # mostly words: `S3ToWarehouseOperator`
    parts = [p for p in _SEPARATORS.split(body) if p]
    if len(parts) >= 3 and sum(len(p) for p in parts if _PLAIN_PART.fullmatch(p)) >= 0.5 * sum(
            map(len, parts)):
        return False  # words between separators: `HTTPCode_ELB_502_Count`
    return _entropy(body) >= 0.78 * math.log2(min(n, 64))


@lru_cache(maxsize=4096)
def decoded_text(token: str) -> str | None:
    """The text a base64 (or base64url) run encodes, or None if it is not base64 of text."""
    body = token.rstrip("=")
    if len(body) < _MIN_BASE64 or len(body) > _MAX_BASE64:
        return None
    return _base64_text(body)


def _base64_text(token: str) -> str | None:
    """`decoded_text` of a token of any length (after `Basic `, a short one is a credential)."""
    body = token.rstrip("=")
    if len(body) % 4 == 1:
        return None
    altchars = b"-_" if "-" in body or "_" in body else None
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=altchars, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    return text if len(_NON_TEXT.findall(text)) * 20 <= len(text) else None


# What `Basic <base64>` encodes: a user name, a colon, the password (RFC 7617).
_BASIC_PAIR = re.compile(r"[^\s:]{1,256}:\S{0,256}")
# The same pair found by itself: a login name and a password that is not a port, a version, a
# hash, a path or a word list (`host:8080/health`, `sha256:<hex>`, `Content-Type:text/plain`).
_CREDENTIAL_PAIR = re.compile(r"[A-Za-z][\w.@+\-]{0,63}:(?P<password>[^\s:/][^\s:]{5,127})")
_HEX_DIGEST = re.compile(r"[0-9a-fA-F]{32,}")
_PORT_PATH = re.compile(r"[0-9]{1,5}/")
_PASSWORD_SYMBOL = re.compile(r"[^\w./\-]")


def _credential_pair(text: str) -> bool:
    """`user:password` as `echo admin:S3cr3t! | base64` encodes it: a password with a letter and
    a digit or a symbol."""
    m = _CREDENTIAL_PAIR.fullmatch(text.rstrip("\r\n"))
    if m is None:
        return False
    password = m.group("password")
    return (_LETTER.search(password) is not None
            and (_DIGIT.search(password) is not None
                 or _PASSWORD_SYMBOL.search(password) is not None)
            and _NUMBERISH.fullmatch(password) is None and _HEX_DIGEST.fullmatch(password) is None
            and _PORT_PATH.match(password) is None)


def _long_runs(text: str) -> tuple[set[str], set[str]]:
    """Distinct token-character runs of 20 or more, and distinct runs joined by `.` or `~` that
    long, looked for only in words that long."""
    words = [word for word in text.split() if len(word) >= _MIN_RANDOM]
    runs = {m.group() for word in words for m in _RUN.finditer(word)}
    joined = {run for word in words if "." in word or "~" in word
              for m in _JOINED_RUN.finditer(word) if "." in (run := m.group()) or "~" in run}
    return runs, joined


@dataclass(frozen=True)
class LongTokens:
    """Runs of 20+ token characters with no key name or vendor prefix before them: base64 whose
    decoded text holds a secret (`echo KEY | base64`, a Kubernetes Secret), redacted with this
    redactor's own classes, becomes `base64_secret`, and base64 of a `user:password` pair
    `basic_auth`; a random-looking run (a key pasted in prose, also one joined by `.` or `~`)
    becomes `high_entropy`, unless it is base64 of plain text, labelled an id (`Cluster ID: …`,
    `"requestId": "…"`) or a data URI's payload."""

    name: str = "long_tokens"
    hints: tuple[str, ...] = ()

    def apply(self, text: str, redactor: Redactor) -> tuple[str, dict[str, int]]:
        runs, joined_runs = _long_runs(text)
        random_joined = {token for token in joined_runs
                         if looks_random(token) and _MASKED.search(token) is None}
        found = dict.fromkeys(random_joined, "high_entropy")
        for token in runs:
            decoded = decoded_text(token)
            if decoded is not None:
                if redactor.redact_with_counts(decoded)[1]:
                    found[token] = "base64_secret"
                elif _credential_pair(decoded):
                    found[token] = "basic_auth"
            elif looks_random(token):
                found[token] = "high_entropy"
        if not found:
            return text, {}
        # one scan each, made only once a secret was found; runs that overlap (a joined run and
        # the runs inside it or across its ends) are one secret, under the first one's class
        joined = ([m for m in _JOINED_RUN.finditer(text) if m.group() in random_joined]
                  if random_joined else [])
        spans: list[tuple[int, int, str]] = []
        counts = Counter[str]()
        for m in heapq.merge(joined, _RUN.finditer(text), key=lambda m: m.start()):
            cls = found.get(m.group())
            if cls is None:
                continue
            before = text[max(0, m.start() - 32) : m.start()]
            if cls == "high_entropy" and (_ID_LABEL.search(before) or before.endswith("base64,")):
                continue
            if spans and m.start() < spans[-1][1]:
                start, end, marker = spans[-1]
                spans[-1] = (start, max(end, m.end()), marker)
                continue
            spans.append((m.start(), m.end(), _marker(cls)))
            counts[cls] += 1
        return (_replace_spans(text, spans), dict(counts)) if spans else (text, {})


# A line ending in 8+ token characters, the next starting with 4+ (after an indent or a quote).
_BREAK = re.compile(r"\n(?:(?<=[A-Za-z0-9+/_=\-]{8}\n)|(?<=[A-Za-z0-9+/_=\-]{8}\r\n))"
                    r"(?=[ \t]{0,16}(?:[>#*;]+[ \t]*)?[A-Za-z0-9+/_\-]{4})")
_PIECE = re.compile(r"[ \t]{0,16}(?:[>#*;]+[ \t]*)?([A-Za-z0-9+/_=\-]+)")
_MAX_JOINED = 4096


def _changed(before: str, after: str) -> tuple[int, int]:
    """The span of `before` that redaction replaced: (unchanged prefix, unchanged suffix)."""
    limit = min(len(before), len(after))
    head = 0
    while head < limit and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < limit - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    return head, tail


def _classes_at_end(text: str, redactor: Redactor) -> set[str]:
    """The classes found in `text` if a secret runs to its very end, else none."""
    redacted, found = redactor.redact_with_counts(text)
    return set(found) if found and _changed(text, redacted)[1] == 0 else set()


@dataclass(frozen=True)
class SplitTokens:
    """A token cut by a line break (a wrapped terminal line, a key pasted over two lines, base64
    wrapped at 64 or 76 columns): the pieces are joined and redacted as one, and the join's
    redaction replaces them when the secret it found crosses the break.

    A block of whole lines of token characters is joined once, whole (wrapped base64 holds its
    secret anywhere, up to 4 KiB per block). A break outside such a block is tried on its own,
    with the run before it and the run after it, when the two hold a digit (names rarely do, keys
    almost always). A first piece that is already a whole secret of the class the join finds
    keeps the next line out: `DB_PASSWORD=x1` must not swallow the `DB_HOST=…` line after it,
    while `GH=ghp_…` cut short (random-looking alone, a GitHub token joined) is joined."""

    name: str = "split_token"
    hints: tuple[str, ...] = ()  # `_BREAK` starts with a line break: as cheap as a hint

    def apply(self, text: str, redactor: Redactor) -> tuple[str, dict[str, int]]:
        spans: list[tuple[int, int, str]] = []
        counts: dict[str, int] = {}
        done = 0  # replaced, or tried whole as a block, up to here
        for brk in _BREAK.finditer(text):
            head_end = brk.start() - (text[brk.start() - 1] == "\r")
            if head_end < done:
                continue
            line = text[text.rfind("\n", 0, head_end) + 1 : head_end]
            head_start = head_end - len(line) + len(line.rstrip(_TOKEN_CHARS))
            pieces = _pieces(text, head_start, head_end, brk.end(), _MAX_JOINED)
            found = None
            if len(pieces) > 2:
                done = pieces[-1][1]
                found = _join(text, pieces, redactor)
            if found is None and len(pieces) > 1:
                pieces = pieces[:2]
                found = _join_pair(text, pieces, redactor)
            if found is None:
                continue
            redacted, classes = found
            spans.append((head_start, pieces[-1][1], redacted))
            done = pieces[-1][1]
            for name, n in classes.items():
                counts[name] = counts.get(name, 0) + n
        return (_replace_spans(text, spans), counts) if spans else (text, {})


def _pieces(text: str, head_start: int, head_end: int, pos: int,
            limit: int) -> list[tuple[int, int]]:
    """The head and the runs that continue it: the run after the break, then, up to `limit`
    characters, one per further line while each run fills its line. A plain word (`next`,
    `Then`, `done`) continues nothing: it is the prose after a token, not its end."""
    pieces = [(head_start, head_end)]
    size = head_end - head_start
    while (m := _PIECE.match(text, pos)) is not None and not _PLAIN_PART.fullmatch(m.group(1)):
        pieces.append(m.span(1))
        size += m.end(1) - m.start(1)
        end = m.end(1)
        step = 2 if text.startswith("\r\n", end) else 1 if text.startswith("\n", end) else 0
        if not step or size >= limit:
            break  # the run ends inside its line (the token ends there), or the block is long
        pos = end + step
    return pieces


def _join_pair(text: str, pieces: list[tuple[int, int]],
               redactor: Redactor) -> tuple[str, dict[str, int]] | None:
    """`_join` for a line's last run and the next line's first, when they hold a digit (names
    rarely do, keys almost always) and the first is not already a whole secret of the class the
    join finds (the next line is then not part of it)."""
    (head_start, head_end), (_, tail_end) = pieces
    if _DIGIT.search(text, head_start, tail_end) is None:
        return None
    found = _join(text, pieces, redactor)
    if found is None or found[1].keys() <= _classes_at_end(text[head_start:head_end], redactor):
        return None
    return found


def _join(text: str, pieces: list[tuple[int, int]],
          redactor: Redactor) -> tuple[str, dict[str, int]] | None:
    """The joined pieces redacted, if a secret found there crosses the first break."""
    joined = "".join(text[a:b] for a, b in pieces)
    redacted, found = redactor.redact_with_counts(joined)
    cut = pieces[0][1] - pieces[0][0]
    kept_head, kept_tail = _changed(joined, redacted)
    if not found or kept_head >= cut or len(joined) - kept_tail <= cut:
        return None
    return redacted, found


# --- a secret a few words after a keyword in prose ----------------------------------------------

# `pass` alone is a verb, a test verdict or a counter ("pass `dtype=…` to it"), not a keyword
_PROSE_KEYWORD = r"(?i:pass(?:word|wd|phrase|code)|pwd|secret|token|key|credentials?)s?"
_KEYWORD = re.compile(_PROSE_KEYWORD + r"(?=[\s:=\"'`*]|$)")
_KEYWORD_IN_WORD = re.compile(r"(?<![A-Za-z])" + _PROSE_KEYWORD + r"(?![A-Za-z])")
_KEYWORD_ANCHORS = ("pass", "pwd", "secret", "token", "key", "credential")
_WORD = re.compile(r"\S+")
# Words between a keyword and its value that say the value follows.
_CONNECTORS = frozenset({"is", "was", "are", "were", "be", "now", "still", "set", "to", "reset",
                         "changed", "equals", ":", "=", "-", "->", "=>", "→", "—"})
_QUOTES = "\"'`*"
_PLAIN_WORD = re.compile(r"[A-Za-z]+(?:[-'][A-Za-z]+)*")
_NUMBERISH = re.compile(r"v?[0-9][0-9.,:_%+x-]*[A-Za-z]{0,3}")  # 1.2.3, 3600s, 512MB, 0x1f
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_NAMES_A_SECRET = re.compile(r"(?i)pass|pwd|secret|token|key|cred")
_SYMBOL = re.compile(r"[^A-Za-z0-9]")
_LETTER = re.compile(r"[A-Za-z]")


def _value_ok(value: str, password: bool, connected: bool) -> bool:
    """Whether the word after a keyword is its secret: `hunter2!`, not `stored`, `8`, `1.2.3`,
    `config.yaml`, `DB_PASSWORD`, `db_password_2` or `${TOKEN}`."""
    if (len(value) < 6 or value.startswith((*_TEMPLATE_PREFIXES, "/", "~", "./", "[REDACTED:"))
            or "://" in value or any(c in value for c in "([{")):
        return False
    if (_NUMBERISH.fullmatch(value) or _DOTTED_CODE.fullmatch(value) or _ENV_NAME.fullmatch(value)
            or _PASSWORD_VARIABLE.fullmatch(value)
            or ("_" in value and _NAMES_A_SECRET.search(value))):
        return False  # a number, a name or a variable
    if "/" in value:
        return looks_random(value)  # a path, unless a base64 key
    if _PLAIN_WORD.fullmatch(value):
        return False  # "the password is required", also when quoted (a message quoting it)
    if password and connected:
        return _LETTER.search(value) is not None and (
            _DIGIT.search(value) is not None or _SYMBOL.search(value) is not None)
    if connected:
        return len(value) >= 16 and bool(_LETTER.search(value) and _DIGIT.search(value))
    return looks_random(value)


@dataclass(frozen=True)
class NearKeyword:
    """A secret within a few words after a keyword: "the db password is X", "the token: X",
    "my AWS secret key X". After a connector (`is`, `:`, `set to`) a password is any six or more
    characters with a letter and a digit or symbol, a token or key sixteen or more with a letter
    and a digit; without a connector the value must look random. Keywords are found with
    `str.find` on the lowercased text, far cheaper than a case-insensitive regex scan."""

    name: str = "keyword_secret"
    hints: tuple[str, ...] = ()  # it finds its keywords itself, as cheaply as hints would
    max_gap: int = 4  # words allowed between the keyword and its connector or value

    def apply(self, text: str, redactor: Redactor) -> tuple[str, dict[str, int]]:
        lowered = text.lower()
        if len(lowered) != len(text):  # a few characters lowercase to two: scan instead
            starts = [m.start() for m in _KEYWORD.finditer(text)]
        else:
            starts = sorted({i for anchor in _KEYWORD_ANCHORS for i in _find_all(lowered, anchor)})
        spans: list[tuple[int, int, str]] = []
        done = 0
        for start in starts:
            before = text[start - 1 : start]
            if start < done or (before.isalpha() and not (text[start].isupper()
                                                          and before.islower())):
                continue  # inside a word (`monkey`), unless camelCase (`apiKey`)
            m = _KEYWORD.match(text, start)
            span = self._value(text, m.end(), m.group().lower().startswith("p")) if m else None
            if span is not None:
                spans.append((*span, _marker(self.name)))
                done = span[1]
        return (_replace_spans(text, spans), {self.name: len(spans)}) if spans else (text, {})

    def _value(self, text: str, pos: int, password: bool) -> tuple[int, int] | None:
        end = min(len(text), pos + 160)
        line_end = text.find("\n", pos, end)  # bounded: a 2 MB line is not scanned per keyword
        end = end if line_end == -1 else line_end
        connected, gap = False, 0
        for word in _WORD.finditer(text, pos, end):
            start, stop = word.span()
            bare = word.group().strip(_QUOTES).lower()
            if bare in _CONNECTORS or (bare.endswith((":", "=")) and gap < self.max_gap):
                connected = True
                continue
            if _KEYWORD_IN_WORD.search(word.group()):
                return None  # another keyword: what follows is its value, not this one's
            if word.group()[0] in ":=":  # `token:X`
                connected, start = True, start + 1
            while start < stop and text[start] in _QUOTES + "(<[":
                start += 1
            while stop > start and text[stop - 1] in _QUOTES + ".,;:)>]":
                stop -= 1
            if _value_ok(text[start:stop], password, connected):
                return start, stop
            if connected or gap >= self.max_gap or word.group()[-1] in ".!?;,":
                return None
            gap += 1
        return None


DEFAULT_PATTERNS: tuple[Detector, ...] = (
    RedactionPattern(
        "pem_private_key",
        _rx(_PEM_HEAD, "(?:", _PEM_BODY, _PEM_TAIL, "|", _PEM_LINES, ")"),
        hints=("-----begin",),
    ),
    SplitTokens(),
    RedactionPattern(
        "uri_credentials",
        _rx(
            r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}\\?://", _NOT_REDACTED,
            # `@` may sit inside the user (`admin@server` on Azure) and, unencoded, inside the
            # password: the user ends at the first `:`, the password at the authority's last `@`.
            # Hydra writes a URL in an override escaped (`http\://user\:pass@…`): a backslash
            # may precede the `:` and escape any character of the password.
            r"""(?P<secret>[^\s:/?#\[\]"'<>\\]{0,256}\\?:(?:[^\s/?#"'<>\\]|\\.){1,256})@""",
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
        # literal first, no hints: scanning for `g` costs less than six hint lookups
        _rx(r"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})"),
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
        "gitlab_token",
        _rx(r"gl(?<![A-Za-z0-9_]gl)(?:pat|dt|rt|ptt|ft|imt|oas|cbt|soat|agent)-[A-Za-z0-9_\-]{20,}"),
    ),
    RedactionPattern(
        "npm_token",
        _rx(r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    ),
    RedactionPattern(
        "pypi_token",
        _rx(r"pypi-AgE(?<![A-Za-z0-9_]pypi-AgE)[A-Za-z0-9_\-]{50,}"),
    ),
    RedactionPattern(
        "sendgrid_key",
        _rx(r"SG\.(?<![A-Za-z0-9_]SG\.)[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![A-Za-z0-9_\-])"),
    ),
    RedactionPattern(
        "google_oauth",
        # client secret, access token, refresh token
        _rx(r"(?<![A-Za-z0-9_\-])(?:GOCSPX-[A-Za-z0-9_\-]{28}|ya29\.[A-Za-z0-9_\-]{30,}",
            r"|1//0[A-Za-z0-9_\-]{40,})"),
        hints=("gocspx-", "ya29.", "1//0"),
    ),
    RedactionPattern(
        "digitalocean_token",
        _rx(r"do(?<![A-Za-z0-9_]do)[opr]_v1_[a-f0-9]{64}"),
    ),
    RedactionPattern(
        "shopify_token",
        _rx(r"shp(?<![A-Za-z0-9_]shp)(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ),
    RedactionPattern(
        "docker_hub_token",
        _rx(r"dckr_pat_(?<![A-Za-z0-9_]dckr_pat_)[A-Za-z0-9_\-]{27,}"),
    ),
    RedactionPattern(
        "vault_token",
        _rx(r"hv(?<![A-Za-z0-9_.]hv)[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ),
    RedactionPattern(
        "age_secret_key",
        _rx(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ),
    RedactionPattern(
        "telegram_bot_token",
        _rx(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}(?![A-Za-z0-9_\-])"),
        hints=(":aa",),
    ),
    RedactionPattern(
        "databricks_token",
        _rx(r"dapi(?<![A-Za-z0-9_]dapi)[a-f0-9]{32}(?:-[0-9])?(?![A-Za-z0-9])"),
    ),
    RedactionPattern(
        "twilio_key",
        # API key SID: `SK` + 32 hex (the Account SID, `AC…`, names an account and is kept)
        _rx(r"SK(?<![A-Za-z0-9_]SK)[0-9a-fA-F]{32}(?![A-Za-z0-9])"),
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
            # the header's value without its name (`-H 'Basic …'`, "send Basic …"): base64 of
            # `user:pass`, checked by decoding it
            r"|(?<![\w\-])(?i:basic)[ \t]+(?P<secret_b64>[A-Za-z0-9+/]{4,1024}={0,2})",
            r"(?![A-Za-z0-9+/=])",
        ),
        accept=_accept_basic_auth,
        hints=("-u", "basic"),
        anchors=("-u", "--user", "basic"),
    ),
    RedactionPattern(
        "azure_key",
        # storage and Service Bus connection strings; a SAS URL's signature
        _rx(r"(?i:account|sharedaccess)(?i:key)[ \t]*=[ \t]*", _NOT_REDACTED,
            r"(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
            r"|[?&;]sig=", _NOT_REDACTED, r"(?P<secret_sig>[A-Za-z0-9%+/]{16,}(?:%3[Dd]|=){0,2})"),
        hints=("accountkey", "sharedaccesskey", "sig="),
    ),
    RedactionPattern(
        "cli_password",
        # a password glued to `-p` (MySQL/MariaDB clients), after `sshpass -p`, `redis-cli -a`
        _rx(r"(?:(?i:mysql(?:dump|admin|import|check|sh|slap)?|mariadb(?:-dump|-admin)?)\b",
            r"[^\n|;&]{0,200}?(?<!\S)-p(?=\S)|(?i:sshpass)\b[^\n|;&]{0,40}?(?<!\S)-p[ \t]*",
            r"|redis-cli\b[^\n|;&]{0,200}?(?<!\S)-a[ \t]+)",
            r"(?:'", _NOT_REDACTED, r"(?P<secret_1>[^'\n]+)'",
            r'|"', _NOT_REDACTED, r'(?P<secret_2>[^"\n]+)"',
            r"|", _NOT_REDACTED, r"""(?P<secret>[^\s'"]+))"""),
        hints=("mysql", "mariadb", "sshpass", "redis-cli"),
    ),
    RedactionPattern(
        "netrc_password",
        _rx(r"password(?<![\w-]password)[ \t]+", _NOT_REDACTED, r"""(?P<secret>[^\s"'`]+)"""),
        accept=_accept_netrc,
        hints=("machine", "default"),
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
        anchors=("--", "api", "access", "auth", "secret", "private", "token", "bearer"),
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
        anchors=("--", "pass", "pwd"),
    ),
    NearKeyword(),
    LongTokens(),
    RedactionPattern(
        "email",
        # `git@host:org/repo.git` is an SSH remote, not a person: keep it so traces stay readable.
        _rx(r"(?<![\w.%+\-])(?!git@)", _EMAIL_LOCAL, "@", _EMAIL_DOMAIN, r"(?![\w\-])"),
        accept=_accept_email,
        hints=("@",),
    ),
)

DEFAULT_REDACTOR = Redactor(DEFAULT_PATTERNS)


# Recent texts' redactions are remembered (a gate redacts each entry to read it and again to
# store it, in every pass): 8 M characters of texts and their redactions, a few tens of MB.
_REMEMBERED = TextMemo(DEFAULT_REDACTOR.redact, max_chars=8_000_000)


def redact(text: str) -> str:
    """Redact with the default patterns; the one call every outbound path should make."""
    return _REMEMBERED(text)


def redacted(value: Any) -> Any:
    """Every string in a JSON-like value redacted (keys stay: they are memeval's own names)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redacted(v) for v in value]
    return value
