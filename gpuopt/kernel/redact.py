"""Secrets out of every message and log line: API keys, secret access keys and tokens, in every encoding they
travel in (issue 13: a percent-encoded GCP API key in a request URL reached an error message).

:func:`scrub` replaces each known secret — the ones passed, the ones registered with :func:`register` (an API key
given as an option) and the ones in SECRET_ENV_VARS — in its raw form and in the forms a URL, JSON or a header
carries it: percent-encoded (``quote``/``quote_plus``, upper- and lower-case hex, once or twice), JSON-escaped and
base64 (standard and URL-safe, with and without padding). It also masks, whoever's they are, the values of
credential-like URL parameters (``key=``, ``api_key=``, ``access_token=``, ``X-Amz-Signature=`` ...),
``Authorization``/``Bearer`` header values and AWS access key ids (``AKIA``/``ASIA`` + 16).

:class:`ScrubFilter` applies it to log records (the CLI installs it on its log handlers, so urllib3's and
botocore's debug lines, which print request URLs, are scrubbed too). The CLI scrubs every error line it prints;
the refresh scrubs what it records per provider and region.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import threading
from urllib.parse import quote, quote_plus

#: Environment variables whose values are secrets (scrubbed wherever they appear).
SECRET_ENV_VARS: tuple[str, ...] = ("GPUOPT_GCP_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                                    "AWS_SECURITY_TOKEN", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PASSWORD")
#: Secrets shorter than this are not scrubbed by value (a 3-letter "key" would mask every word holding it); the
#: patterns below still mask them where they appear as a parameter value.
MIN_SECRET_LEN = 8
MASK = "***"

_PARAM_RE = re.compile(
    r"(?i)((?:[?&;]|\b)(?:key|api[_-]?key|apikey|access[_-]?token|refresh[_-]?token|id[_-]?token|token|"
    r"client[_-]?secret|secret|password|passwd|sig|signature|x-amz-signature|x-amz-security-token|"
    r"x-amz-credential)=)([^&\s'\"<>]+)")
_HEADER_RE = re.compile(r"(?i)\b(authorization|x-goog-api-key|x-api-key|ocp-apim-subscription-key)"
                        r"(['\"]?\s*[:=]\s*['\"]?)(?:(bearer|basic|aws4-hmac-sha256)\s+)?([^\s'\",}]+)")
_BEARER_RE = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}")
_AWS_KEY_ID_RE = re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b")

_REGISTERED: set[str] = set()
_LOCK = threading.Lock()


def register(secret: str | None) -> None:
    """Scrub ``secret`` from every later message and log line of this process (e.g. an API key given as an
    option rather than in the environment). Empty or short values are ignored."""
    if secret and len(secret.strip()) >= MIN_SECRET_LEN:
        with _LOCK:
            _REGISTERED.add(secret.strip())


def _hex_case(s: str) -> set[str]:
    """``s`` with its %XX escapes in upper and in lower case."""
    return {s, re.sub(r"%[0-9A-Fa-f]{2}", lambda m: m.group(0).lower(), s)}


def forms(secret: str) -> set[str]:
    """Every encoding of ``secret`` that :func:`scrub` looks for (raw, percent-encoded once and twice, JSON-escaped,
    base64 standard and URL-safe, padded or not)."""
    out = {secret}
    for enc in (quote(secret, safe=""), quote(secret), quote_plus(secret), quote(quote(secret, safe=""), safe=""),
                quote_plus(quote_plus(secret))):
        out |= _hex_case(enc)
    out.add(json.dumps(secret)[1:-1])
    raw = secret.encode("utf-8")
    for b in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = b.decode("ascii")
        out |= {text, text.rstrip("=")}
    return {f for f in out if f}


def _secrets(extra) -> list[str]:
    found = {s.strip() for s in extra if s and len(str(s).strip()) >= MIN_SECRET_LEN}
    for name in SECRET_ENV_VARS:
        v = os.environ.get(name, "").strip()
        if len(v) >= MIN_SECRET_LEN:
            found.add(v)
    with _LOCK:
        found |= _REGISTERED
    allforms = {f for s in found for f in forms(str(s)) if len(f) >= MIN_SECRET_LEN}
    return sorted(allforms, key=len, reverse=True)  # longest first: an encoded form before the raw one inside it


def scrub(text: object, *secrets: str | None) -> str:
    """``text`` (any object, as str) with every secret masked as ``***``: the ``secrets`` given, the registered
    ones and SECRET_ENV_VARS in every encoding of :func:`forms`, then credential-like URL parameters,
    authorization header values and AWS access key ids whoever's they are. Never raises."""
    s = str(text)
    for f in _secrets(secrets):
        if f in s:
            s = s.replace(f, MASK)
    s = _PARAM_RE.sub(lambda m: m.group(1) + MASK, s)
    s = _HEADER_RE.sub(lambda m: m.group(1) + m.group(2) + (m.group(3) + " " if m.group(3) else "") + MASK, s)
    s = _BEARER_RE.sub(lambda m: m.group(1) + " " + MASK, s)
    s = _AWS_KEY_ID_RE.sub(lambda m: m.group(1) + "*" * 16, s)
    return s


class ScrubFilter(logging.Filter):
    """A logging filter that scrubs each record's message (arguments merged in) before any handler formats it;
    exception text is scrubbed too. Install it on handlers: a handler's filters see the records of every logger
    that propagates to it (urllib3, botocore)."""

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: A003 - logging's own name
        try:
            msg = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: keep it as logging would
            msg = str(record.msg)
        record.msg, record.args = scrub(msg), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """Add one :class:`ScrubFilter` to every handler of ``logger`` (default: the root logger)."""
    logger = logger or logging.getLogger()
    for h in logger.handlers:
        if not any(isinstance(f, ScrubFilter) for f in h.filters):
            h.addFilter(ScrubFilter())
