"""Remote code run unseen: a script fetched over the network and piped straight into a shell or an
interpreter (``curl … | sh``, ``bash <(wget …)``, ``iwr … | iex``), and a blob decoded and run
(``echo … | base64 -d | sh``, ``powershell -enc …``).

``curl -fsSL https://sh.rustup.rs | sh`` is how half the toolchains install, and memories say so. A
fetch-and-run is therefore flagged only when one of its hosts is neither on ``WELL_KNOWN_INSTALLERS``
(the documented one-line installers of widely used tools) nor on the organization's own allowed hosts.
An entry is a host (``get.docker.com``), a host with a path prefix for hosts that serve anyone's files
(``raw.githubusercontent.com/Homebrew/``), or a domain with a leading dot for all its subdomains
(``.example.com``). A fetch whose host cannot be read (``curl "$URL" | sh``) is flagged: nobody can
check it. A decoded blob run as code is always flagged: there is nothing to allow."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator

from reasoningbank.poisoning.catalogue import Hit
from reasoningbank.poisoning.context import negated
from reasoningbank.poisoning.phrases import Text, phrase

__pure__ = True  # Django-free (tests/test_import_contracts.py)

WELL_KNOWN_INSTALLERS: tuple[str, ...] = (
    "sh.rustup.rs", "get.docker.com", "test.docker.com", "deb.nodesource.com", "rpm.nodesource.com",
    "install.python-poetry.org", "astral.sh", "bun.sh", "deno.land", "get.pnpm.io", "pyenv.run", "get.sdkman.io",
    "install.determinate.systems", "nixos.org", "get.k3s.io", "starship.rs", "tailscale.com", "fly.io",
    "get.rvm.io", "get.volta.sh", "dot.net", "ollama.com", "get.helm.sh", "get-ghcup.haskell.org",
    "install.julialang.org", "sh.vector.dev", "get.jetify.com", "cli.doppler.com", "get.trunk.io", "mise.run",
    "get.chezmoi.io", "micro.mamba.pm", "pixi.sh", "get.opentofu.org", "sdk.cloud.google.com", "get.rke2.io",
    "raw.githubusercontent.com/Homebrew/", "raw.githubusercontent.com/nvm-sh/", "raw.githubusercontent.com/ohmyzsh/",
    "raw.githubusercontent.com/helm/", "raw.githubusercontent.com/pyenv/", "raw.githubusercontent.com/golangci/",
    "raw.githubusercontent.com/ocaml/", "raw.githubusercontent.com/rbenv/", "raw.githubusercontent.com/creationix/",
    "raw.githubusercontent.com/kubernetes/", "raw.githubusercontent.com/kubernetes-sigs/",
    "raw.githubusercontent.com/git-lfs/", "github.com/rbenv/", "packagecloud.io/", "install.terraform.io",
    "cli.github.com", "get.scoop.sh", "community.chocolatey.org", "aka.ms/install-azd", "aka.ms/InstallAzureCLIDeb",
)  # fmt: skip

_FETCH = r"(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod|http|https|xh)"
_RUNNER = (
    r"(?:sudo(?: -[\w-]{1,20}){0,6}\s)?(?:env\s[^|\n]{0,40}\s)?(?:(?:ba|z|k|da|fi|a)?sh|python[0-9.]{0,5}|perl|"
    r"ruby|node|php|iex|invoke-expression|pwsh|powershell|source|\.)\b"
)
_FETCH_WORD = re.compile(rf"\b{_FETCH}\b")
# … | sh: a pipe into a shell or an interpreter (curl … | sh is found from its pipe, then its fetch)
_PIPE_TO_RUNNER = phrase(rf"\|\s?{_RUNNER}", ("|",))
FETCH_STAGE = 300
_FETCH_AND_RUN = [
    # bash <(curl …)
    phrase(rf"(?:\b(?:ba|z)?sh|\bsource|(?:^|\s)\.)\s(?:-\w{{1,20}}\s)?<\(\s?{_FETCH}\b[^)\n]{{0,300}}+\)", ("<(",)),
    # sh -c "$(curl …)"
    phrase(
        rf"\b(?:(?:ba|z)?sh|python[0-9.]{{0,5}}|perl|ruby|node|eval)\s(?:-c\s)?['\"]?\$\(\s?{_FETCH}\b[^)\n]{{0,300}}+\)",
        ("$(",),
    ),
    # iex (new-object net.webclient).downloadstring(…) / iex (iwr …)
    phrase(
        r"\b(?:iex|invoke-expression)\s?\(?\s?(?:\(?\s?new-object\s(?:system\.)?net\.webclient\)?\.downloadstring|"
        r"iwr|irm|invoke-webrequest|invoke-restmethod)[^\n]{0,300}+",
        ("iex", "invoke-expression"),
    ),
]
# curl -o x.sh https://… && sh x.sh / … -o x.sh; chmod +x x.sh && ./x.sh: found from the "&&" or ";"
_SEPARATOR = phrase(r"&&|;", ("&&", ";"))
_OUTPUT_FILE = re.compile(r"\s-o\s?([\w./-]{1,80})")
_RUN_FILE = re.compile(
    r"(?:&&|;)\s?(?:chmod\s\+?[\w+]{1,4}\s(?:\./)?(?P<chmod>[\w./-]{1,80})\s?(?:&&|;)\s?)?(?:sudo\s)?"
    r"(?:(?:(?:ba|z)?sh|python[0-9.]{0,5}|source|\.)\s)?(?:\./)?(?P<run>[\w./-]{1,80})\b"
)
_URL = re.compile(r"(?:https?://)?((?:[a-z0-9-]{1,63}\.){1,10}[a-z]{2,24})(?::\d{1,5})?(/[^\s'\"|)<>]{0,300})?")
_FILE_NAME = re.compile(r"[\w-]+\.(?:sh|py|ps1|rb|pl|js|bash|zsh)")
_OPTION_VALUE = re.compile(
    r"\s-(?:h|a|u|e|x|b|c|w|-header|-user-agent|-user|-referer|-proxy)\s?(?:'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|\S{1,200})"
)

_ENCODED_RUN = [
    phrase(r"\bbase64\s(?:-d|--decode)\b[^|\n]{0,200}+\|\s?" + _RUNNER, ("|",), reach=500),
    phrase(
        r"\b(?:xxd\s-r(?:\s-p)?|openssl\s(?:base64|enc)\s-d|uudecode)\b[^|\n]{0,200}+\|\s?" + _RUNNER, ("|",), reach=500
    ),
    phrase(
        r"\beval\s?[\"'(]{0,3}\s?\$\([^)\n]{0,300}?(?:base64\s(?:-d|--decode)|xxd\s-r|rev\b)", ("base64", "xxd", "rev")
    ),
    phrase(
        r"\b(?:exec|eval)\s?\(\s?(?:base64\.b64decode|__import__\(\s?['\"]base64|codecs\.decode|bytes\.fromhex|"
        r"zlib\.decompress|atob)",
        ("b64decode", "base64", "codecs.decode", "fromhex", "decompress", "atob"),
    ),
    phrase(
        r"\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,60}\s-(?:e|ec|en|enc|enco|encodedcommand)\s[a-z0-9+/=]{16,1000}+",
        ("powershell", "pwsh"),
        reach=1200,
    ),
    phrase(r"\b(?:iex|invoke-expression)\b[^\n]{0,120}frombase64string", ("frombase64string",)),
    phrase(r"\bfrombase64string\b[^\n]{0,200}\|\s?(?:iex|invoke-expression)\b", ("frombase64string",)),
]


def host_allowed(host: str, path: str, allowed_hosts: Collection[str]) -> bool:
    """``host`` + ``path`` is covered by a well-known installer or by one of ``allowed_hosts``."""
    host = host.lower().rstrip(".")
    for entry in (*WELL_KNOWN_INSTALLERS, *allowed_hosts):
        entry = entry.strip().lower()
        if not entry:
            continue
        if "://" in entry:
            entry = entry.split("://", 1)[1]
        entry_host, _, entry_path = entry.partition("/")
        if entry_host.startswith("*."):
            entry_host = entry_host[1:]
        if entry_host.startswith("."):
            matches_host = host == entry_host[1:] or host.endswith(entry_host)
        else:
            matches_host = host == entry_host
        if matches_host and (not entry_path or path.lower().lstrip("/").startswith(entry_path)):
            return True
    return False


TRUSTED_HOSTS_MAX = 50  # entries an organization keeps: a list to read, not a second internet
TRUSTED_HOST_MAX_LENGTH = 253  # the longest DNS name; an entry with a path prefix fits in it too
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_PATH_PREFIX = re.compile(r"/[a-z0-9._~!$&+,;=:@%/-]*")  # what the detector reads as a URL's path
_IPV4 = re.compile(r"[0-9.]+")


class TrustedHostInvalid(ValueError):
    """An entry of an organization's trusted hosts that cannot be kept: ``entry`` as given, ``reason``
    saying what to write instead."""

    def __init__(self, entry: str, reason: str) -> None:
        super().__init__(f"{entry!r}: {reason}")
        self.entry, self.reason = entry, reason


def trusted_host_clean(entry: str) -> str:
    """One trusted-host entry as ``host_allowed`` reads it: lower case, without an http(s) scheme or a
    trailing dot, the host in ASCII (an internationalised name becomes its ``xn--`` form). Its forms: a
    host (``tools.acme.dev``), a host and a path prefix (``raw.githubusercontent.com/acme/``), or a domain
    with a leading dot for all its subdomains (``.acme.dev``). Refused, each with the fix: another scheme,
    a port, a user, a query, a wildcard other than that leading dot, an IP address (a script fetched from
    a bare address is always flagged: nothing can vouch for whoever holds it), a name without a dot (the
    detector reads only dotted names), a whole top-level domain (``.com``), more than 253 characters."""
    raw = entry
    text = entry.strip().lower()
    if not text:
        raise TrustedHostInvalid(raw, "an empty entry")
    if any(ch.isspace() or not ch.isprintable() for ch in text):
        raise TrustedHostInvalid(raw, "an entry is one host, without spaces or control characters")
    scheme, separator, rest = text.partition("://")
    if separator:
        if scheme not in ("http", "https"):
            raise TrustedHostInvalid(raw, "only an http:// or https:// prefix may be given (or none)")
        text = rest
    host, slash, path = text.partition("/")
    path = slash + path
    if "*" in text:
        raise TrustedHostInvalid(raw, "no wildcards: write .example.com to trust every subdomain of example.com")
    if "?" in path or "#" in path:
        raise TrustedHostInvalid(raw, "a path prefix has no query or fragment (?, #)")
    if "@" in host:
        raise TrustedHostInvalid(raw, "no user name: give the host alone")
    if host.startswith("[") or ":" in host:
        reason = "an IP address cannot be trusted" if host.startswith("[") or host.count(":") > 1 else "no port"
        raise TrustedHostInvalid(raw, f"{reason}: give the host name alone (it covers every port)")
    subdomains = host.startswith(".")
    name = host.removeprefix(".").rstrip(".")
    try:
        name = name.encode("idna").decode("ascii") if not name.isascii() else name
    except UnicodeError:
        raise TrustedHostInvalid(raw, "not a valid internationalised host name") from None
    labels = name.split(".")
    if not name or not all(_LABEL.fullmatch(label) for label in labels):
        raise TrustedHostInvalid(
            raw, "not a host name: letters, digits and hyphens between dots (tools.example.com), a leading dot "
            "for subdomains (.example.com), then an optional path (/acme/)"
        )  # fmt: skip
    if _IPV4.fullmatch(name) or labels[-1].isdigit():
        raise TrustedHostInvalid(raw, "an IP address cannot be trusted: a script fetched from one is always flagged")
    if len(labels) < 2:
        raise TrustedHostInvalid(
            raw, "a leading dot needs a domain (.example.com), not a top-level domain" if subdomains
            else "a host name with at least one dot (tools.example.com)"
        )  # fmt: skip
    if path and not _PATH_PREFIX.fullmatch(path):
        raise TrustedHostInvalid(raw, "a path prefix of letters, digits and / . _ ~ - (e.g. example.com/acme/)")
    cleaned = ("." if subdomains else "") + name + (path if path != "/" else "")
    if len(cleaned) > TRUSTED_HOST_MAX_LENGTH:
        raise TrustedHostInvalid(raw, f"longer than {TRUSTED_HOST_MAX_LENGTH} characters")
    return cleaned


def trusted_hosts_clean(entries: Iterable[str]) -> list[str]:
    """An organization's trusted hosts as kept: each entry cleaned (``trusted_host_clean``), blank ones
    (empty lines of a form) dropped, duplicates removed in the order given, at most ``TRUSTED_HOSTS_MAX``.
    The first bad entry raises ``TrustedHostInvalid`` naming it."""
    cleaned = list(dict.fromkeys(trusted_host_clean(entry) for entry in entries if entry.strip()))
    if len(cleaned) > TRUSTED_HOSTS_MAX:
        raise TrustedHostInvalid(
            cleaned[TRUSTED_HOSTS_MAX], f"more than {TRUSTED_HOSTS_MAX} entries: use a leading dot (.example.com) to "
            "trust a domain's subdomains in one entry"
        )  # fmt: skip
    return cleaned


def _fetch_is_allowed(command: str, allowed_hosts: Collection[str]) -> bool:
    """Every URL of the fetch part of ``command`` is allowed, and there is at least one."""
    fetch_part = _OPTION_VALUE.sub(" ", command.split("|", 1)[0] if "|" in command else command)
    found = list(_URL.finditer(fetch_part))
    with_scheme = [match for match in found if "://" in match.group()]
    if with_scheme:
        found = with_scheme
    else:  # a bare "install.sh" is a file name, "bun.sh/install" a host
        found = [match for match in found if match.group(2) or not _FILE_NAME.fullmatch(match.group(1))]
    hosts = [(match.group(1), match.group(2) or "") for match in found]
    return bool(hosts) and all(host_allowed(host, path, allowed_hosts) for host, path in hosts)


def _stage_start(text: str, position: int, stops: str, limit: int) -> int:
    """Where the command holding ``position`` starts: after the last of ``stops`` within ``limit``."""
    low = max(0, position - limit)
    return max(max(text.rfind(stop, low, position) for stop in stops), low - 1) + 1


def _fetch_and_run(scan: Text) -> Iterator[tuple[int, int]]:
    """The spans of ``curl … | sh`` and of download-then-run, as written (lowered)."""
    lowered = scan.lower
    for pipe in _PIPE_TO_RUNNER.finditer(scan, "remote_script"):
        stage = _stage_start(lowered, pipe.start(), "|\n;&", FETCH_STAGE + 20)
        fetch = _FETCH_WORD.search(lowered, stage, pipe.start())
        if fetch is not None and pipe.start() - fetch.end() <= FETCH_STAGE:
            yield fetch.start(), pipe.end()
    for pattern in _FETCH_AND_RUN:
        for match in pattern.finditer(scan, "remote_script"):
            yield match.span()
    for separator in _SEPARATOR.finditer(scan, "remote_script"):
        stage = _stage_start(lowered, separator.start(), "|\n;&", 520)
        fetch = _FETCH_WORD.search(lowered, stage, separator.start())
        run = _RUN_FILE.match(lowered, separator.start())
        if fetch is None or run is None:
            continue
        if run.group("chmod") and run.group("chmod").removeprefix("./") != run.group("run").removeprefix("./"):
            continue
        outputs = {name.removeprefix("./") for name in _OUTPUT_FILE.findall(lowered, fetch.end(), separator.start())}
        if run.group("run").removeprefix("./") in outputs:
            yield fetch.start(), run.end()


def hits(scan: Text, allowed_hosts: Collection[str] = ()) -> Iterator[Hit]:
    text = scan.text
    for start, end in _fetch_and_run(scan):
        if negated(text, start, window=24) or _fetch_is_allowed(scan.lower[start:end], allowed_hosts):
            continue
        yield scan.hit("remote_script", start, end)
    for pattern in _ENCODED_RUN:
        for match in pattern.finditer(scan, "encoded_shell"):
            yield scan.hit("encoded_shell", *match.span())
