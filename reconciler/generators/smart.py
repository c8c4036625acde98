"""The smart generator tier: an LLM behind any OpenAI-compatible chat-completions endpoint.

Settings come from the environment first, then ``generator.smart`` in ``lens.yaml``:

=================  ==========================  ==================================
setting            environment                 ``lens.yaml`` (``generator.smart``)
=================  ==========================  ==================================
base URL           ``DST_LLM_BASE_URL``        ``base_url``
model              ``DST_LLM_MODEL``           ``model``
API key            ``DST_LLM_API_KEY``         never (only the variable's name,
                                               ``api_key_env``)
=================  ==========================  ==================================

The prompt carries the assembled context — the selected models with their columns,
the selected metrics, the folded exemplars, every skill and the lens's pinned
``as_of`` date — and, on a repair, the executable gate's hint. The reply is one SQL
query (a fenced ``sql`` block or bare text) or ``DECLINE: reason``; the query goes
through the same read-only guard as every other SQL before it is returned.

Every call is made at ``temperature: 0`` with ``seed:`` :data:`SEED` (endpoints
that support it then sample deterministically) and recorded: tier, model, latency
(seconds), prompt and completion tokens, the cost in USD at the lens's per-1k-token
prices and the model's reported ``system_fingerprint``. The API key never appears
in a record, a message or an error (the client's own errors are reduced to their
class and status).

Every answer (SQL or decline) is cached (:mod:`reconciler.generators.cache`), keyed
by the exact messages, the base URL, the model, temperature and seed, the sample
and the occurrence in the run; a failed call is never cached.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from reconciler import guard
from reconciler.assembly.request import GenerationRequest
from reconciler.errors import UnsafeSqlError
from reconciler.generators.cache import GenerationCache, payload_digest
from reconciler.generators.generation import Generation
from reconciler.lens import Lens, SmartTier

ENV_BASE_URL = "DST_LLM_BASE_URL"
ENV_MODEL = "DST_LLM_MODEL"
SEED = 0  # sent with every call; an endpoint that supports it samples reproducibly
TEMPERATURE = 0

_FENCE = re.compile(r"```(?:sql)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_DECLINE = re.compile(r"^\s*DECLINE\s*:?\s*(.*)$", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class SmartSettings:
    """A resolved smart tier: where to call, with what, at what price."""

    base_url: str
    model: str
    api_key: str
    timeout_s: float
    max_retries: int
    prompt_cost_per_1k: float
    completion_cost_per_1k: float


def resolve(lens: Lens, env: Mapping[str, str]) -> tuple[SmartSettings | None, str]:
    """The smart tier's settings for ``lens``, or ``(None, why not)``.

    Environment beats ``lens.yaml`` (module docstring). A missing base URL or
    model means "not configured"; the key may be absent (local servers need none).
    """
    cfg = lens.config.generator.smart or SmartTier()
    base_url = env.get(ENV_BASE_URL) or cfg.base_url
    model = env.get(ENV_MODEL) or cfg.model
    if not base_url or not model:
        missing = " and ".join(
            name for name, value in ((ENV_BASE_URL, base_url), (ENV_MODEL, model)) if not value
        )
        return None, (
            f"the smart tier is not configured: set {missing} "
            f"(or generator.smart.base_url / model in lens.yaml)"
        )
    return (
        SmartSettings(
            base_url=base_url,
            model=model,
            api_key=env.get(cfg.api_key_env, ""),
            timeout_s=cfg.timeout_s,
            max_retries=cfg.max_retries,
            prompt_cost_per_1k=cfg.prompt_cost_per_1k,
            completion_cost_per_1k=cfg.completion_cost_per_1k,
        ),
        "",
    )


class SmartGenerator:
    """Calls the endpoint once per generation; one client per lens setting.

    Raises nothing to its caller: an unreachable endpoint or an HTTP error after the
    client's retries (429 and 5xx back off exponentially, ``max_retries`` times)
    becomes an *error* :class:`Generation`, an unusable reply a declined one; the
    reason says which.
    """

    def __init__(self, settings: SmartSettings, cache: GenerationCache | None = None) -> None:
        try:  # imported here: openai is the optional ``llm`` extra, loaded only when used
            from openai import OpenAI
        except ImportError:  # pragma: no cover - depends on the installed extras
            raise ImportError(
                "pip install openai (dst's llm extra; from a clone of dst: pip install -e '.[llm]')"
            ) from None
        self.settings = settings
        self.cache = cache
        self._client = OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or "not-needed",
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )

    def __call__(
        self, lens: Lens, request: GenerationRequest, hint: str | None = None
    ) -> Generation:
        """One chat completion for ``request`` (or its cached answer): SQL or a decline."""
        messages = prompt(lens, request, hint)
        if self.cache is None:
            return self.complete(lens, messages, hint)
        material = self.key_material(messages)
        return self.cache.through(
            "smart", material, lambda: self.complete(lens, messages, hint), lens
        )

    def peek(self, lens: Lens, request: GenerationRequest) -> Generation | None:
        """The cached answer the next call for ``request`` would get, else ``None`` (no call)."""
        if self.cache is None:
            return None
        return self.cache.peek("smart", self.key_material(prompt(lens, request, None)), lens)

    def key_material(self, messages: list[dict[str, str]]) -> dict[str, object]:
        """What the cache key of one call is made of (module docstring)."""
        s = self.settings
        return {
            "tier": "smart",
            "messages": messages,
            "base_url": s.base_url,
            "model": s.model,
            "temperature": TEMPERATURE,
            "seed": SEED,
        }

    def complete(self, lens: Lens, messages: list[dict[str, str]], hint: str | None) -> Generation:
        """Call the endpoint once with ``messages``; returns SQL or a decline, with usage."""
        s = self.settings
        started = time.perf_counter()
        usage: dict[str, object] = {
            "model": s.model,
            "hint": hint,
            "request_sha256": payload_digest(messages),
        }
        try:
            reply = self._client.chat.completions.create(
                model=s.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=TEMPERATURE,
                seed=SEED,
            )
        except Exception as exc:  # the client's errors carry request details; keep the class
            usage["latency_s"] = round(time.perf_counter() - started, 3)
            status = getattr(exc, "status_code", None)
            reason = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "")
            failed = f"smart tier call failed: {reason}"
            return Generation("smart", None, failed, usage, error=True)
        usage["latency_s"] = round(time.perf_counter() - started, 3)
        usage["system_fingerprint"] = getattr(reply, "system_fingerprint", None)
        if reply.usage is not None:
            p, c = reply.usage.prompt_tokens, reply.usage.completion_tokens
            usage.update(
                prompt_tokens=p,
                completion_tokens=c,
                cost_usd=round(
                    p / 1000 * s.prompt_cost_per_1k + c / 1000 * s.completion_cost_per_1k, 6
                ),
            )
        text = (reply.choices[0].message.content or "") if reply.choices else ""
        sql, declined = parse_reply(text)
        if sql is None:
            return Generation("smart", None, declined, usage)
        try:
            guard.check_read_only(
                sql, lens.config.dialect, allow_functions=lens.config.allow_functions
            )
        except UnsafeSqlError as exc:
            return Generation("smart", None, f"smart tier returned unsafe SQL: {exc}", usage)
        return Generation("smart", sql, None, usage)


def parse_reply(text: str) -> tuple[str | None, str]:
    """``(sql, "")`` from a reply, or ``(None, reason)`` for a decline or empty reply."""
    declined = _DECLINE.match(text)
    if declined:
        return None, f"smart tier declined: {declined.group(1).strip() or 'no reason given'}"
    fenced = _FENCE.search(text)
    sql = (fenced.group(1) if fenced else text).strip().rstrip(";").strip()
    if not sql:
        return None, "smart tier returned no SQL"
    return sql, ""


def prompt(lens: Lens, request: GenerationRequest, hint: str | None) -> list[dict[str, str]]:
    """The chat messages for ``request``: a system rule set and the assembled context."""
    cfg = lens.config
    system = (
        f"You write exactly one read-only SQL query in the {cfg.dialect} dialect that answers "
        "the user's question from the lens context below. Use only the tables and columns "
        "given. Reply with the query in a ```sql block, or with 'DECLINE: <reason>' when the "
        "context cannot answer it. Never write data."
    )
    parts: list[str] = []
    models = request.models or request.related_models or tuple(sorted(lens.models))
    for name in models:
        m = lens.models[name]
        cols = [
            f"  - {c.name}"
            + (f" = {c.expr}" if c.expr else "")
            + f" ({c.data_type})"
            + (f": {c.description}" if c.description else "")
            for c in (*m.dimensions, *m.time_dimensions, *m.facts)
        ]
        joins = [f"  join {j.to} on {j.on} ({j.relationship})" for j in m.joins]
        parts.append(f"table {m.table} (model {name}): {m.description}\n" + "\n".join(cols + joins))
    for name in (*request.metrics, *request.related_metrics):
        mt = lens.metrics[name]
        where = f" where {' and '.join(mt.filters)}" if mt.filters else ""
        parts.append(f"metric {name} on {mt.model}: {mt.expression}{where}. {mt.description}")
    for name in request.exemplars:
        ex = lens.exemplars[name]
        parts.append(f"example question: {ex.question}\nexample SQL: {ex.sql}")
    for path in request.skills:
        parts.append(f"skill {path}:\n{lens.skills[path].text}")
    if cfg.pinned_as_of:
        parts.append(f"today is {cfg.pinned_as_of}; resolve relative periods against it")
    elif cfg.as_of:
        parts.append("resolve relative periods against the warehouse's CURRENT_DATE")
    user = "\n\n".join(parts) + f"\n\nquestion: {request.question}"
    if hint:
        user += f"\n\nthe previous answer was rejected: {hint}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
