"""Redaction by value: what a program printed, made safe to cross into git, webhooks and reports.

A generator program (the ``command`` tier) runs with dst's whole environment, so
anything it prints may hold any of those values: a webhook URL, a personal access
token, a warehouse password, whatever a CI runner exported. Redacting by the
*name* of a variable (``*KEY*``, ``*TOKEN*``) misses ``DST_SLACK_WEBHOOK``,
``GH_PAT`` or ``MY_AUTH``; this module redacts by *value* instead:

1. every environment value the program received, except those of the short
   :data:`SAFE_NAMES` list and ``LC_*`` (locale, shell and terminal settings that
   hold no secret and would otherwise garble every path), and except values
   shorter than :data:`MIN_VALUE_CHARS` characters (``1``, ``true``), which no
   credential is; each value is also matched in its JSON-escaped and
   URL-encoded spellings, the forms a program that dumps its environment prints;
2. the user-info of every URL (``scheme://user:password@host`` →
   ``scheme://***@host``);
3. common token shapes, whatever variable (or file) they came from: OpenAI and
   Anthropic keys (``sk-…``), GitHub tokens (``ghp_…``, ``github_pat_…``), GitLab
   (``glpat-…``), Slack tokens and webhook URLs, AWS access key ids, Google API
   keys, JSON Web Tokens, ``Bearer …`` headers, PEM private keys, and the value
   of ``password=`` / ``token:``-style assignments.

Each is replaced by :data:`MARK`. The module is pure: it takes text and a mapping
and returns text. :func:`tail` is the form that crosses: the last lines of a
stream, redacted before they are cut, so a cut never leaves half a secret.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

MARK = "***"
MIN_VALUE_CHARS = 6
TAIL_LINES = 20
TAIL_CHARS = 2000
# The window redacted before a tail is cut: a value longer than this could straddle
# its start, so it is far longer than the tail and than any credential.
_WINDOW_CHARS = 64 * 1024

SAFE_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "TERM",
        "SHELL",
        "USER",
        "LOGNAME",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "TZ",
        "TMPDIR",
        "COLUMNS",
        "LINES",
        "_",
    }
)
"""Variables whose values are never secret (plus every ``LC_*``)."""

_URL_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/@\s\"']+@", re.IGNORECASE)
_TOKEN_SHAPES = tuple(
    re.compile(p)
    for p in (
        r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
        r"\bsk-[A-Za-z0-9_-]{12,}",
        r"\bgh[pousr]_[A-Za-z0-9]{20,}",
        r"\bgithub_pat_[A-Za-z0-9_]{20,}",
        r"\bglpat-[A-Za-z0-9_-]{20,}",
        r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
        r"https://hooks\.slack\.com/[A-Za-z0-9/_-]+",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"\bAIza[0-9A-Za-z_-]{30,}",
        r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    )
)
_BEARER = re.compile(r"\b(Bearer|Basic)(\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_ASSIGNMENT = re.compile(
    r"((?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|auth)[\"']?\s*[=:]\s*[\"']?)"
    r"[^\s\"',;&]{4,}",
    re.IGNORECASE | re.DOTALL,
)


def is_safe_name(name: str) -> bool:
    """Whether variable ``name``'s value is never redacted (:data:`SAFE_NAMES`, ``LC_*``)."""
    return name in SAFE_NAMES or name.startswith("LC_")


@dataclass(frozen=True)
class Redactor:
    """Redacts one environment's values (module docstring) from any text.

    Attributes:
        values: the spellings to replace, longest first (so a value that holds
            another is replaced whole).
    """

    values: tuple[str, ...]

    @classmethod
    def of(cls, env: Mapping[str, str]) -> Redactor:
        """The redactor for the values of ``env`` outside the safe list."""
        found: set[str] = set()
        for name, value in env.items():
            if is_safe_name(name) or len(value) < MIN_VALUE_CHARS:
                continue
            found.add(value)
            found.add(json.dumps(value, ensure_ascii=False)[1:-1])
            found.add(json.dumps(value)[1:-1])
            found.add(quote(value, safe=""))
        spellings = (v for v in found if len(v) >= MIN_VALUE_CHARS)
        return cls(tuple(sorted(spellings, key=lambda v: (-len(v), v))))

    def __call__(self, text: str) -> str:
        """``text`` with every value, URL user-info and token shape as :data:`MARK`."""
        for value in self.values:
            if value in text:
                text = text.replace(value, MARK)
        text = _URL_USERINFO.sub(rf"\1{MARK}@", text)
        for shape in _TOKEN_SHAPES:
            text = shape.sub(MARK, text)
        text = _BEARER.sub(rf"\1\2{MARK}", text)
        return _ASSIGNMENT.sub(rf"\1{MARK}", text)


def redact(text: str, env: Mapping[str, str]) -> str:
    """``text`` redacted for the environment ``env`` (module docstring)."""
    return Redactor.of(env)(text)


def tail(
    raw: bytes | str,
    redactor: Redactor,
    *,
    lines: int = TAIL_LINES,
    chars: int = TAIL_CHARS,
) -> str:
    """The last ``lines`` lines of ``raw`` (at most ``chars`` characters), redacted.

    The end of ``raw`` is redacted *before* it is cut, so the cut never splits a
    secret into a part that no longer matches. ``""`` for an empty stream.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    window = redactor(text[-_WINDOW_CHARS:])
    kept = window.strip().splitlines()[-lines:]
    return "\n".join(kept)[-chars:]
