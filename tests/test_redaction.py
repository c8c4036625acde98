"""Redaction by value: the golden cases of ``tests/fixtures/redaction.yaml``, and tails.

Each case redacts a text for an environment (:class:`Redactor`) and checks what is
gone and what stays; the tail is cut only after redacting, so a value straddling the
cut never leaves half of itself behind.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from reconciler.generators.redaction import MARK, TAIL_CHARS, Redactor, tail
from tests.helpers import FIXTURES

_CASES: dict[str, Any] = {
    c["id"]: c
    for c in yaml.safe_load((FIXTURES / "redaction.yaml").read_text(encoding="utf-8"))["cases"]
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_redaction_case(case: str) -> None:
    c = _CASES[case]
    redact = Redactor.of(c["env"])
    got = redact(c["text"])
    for gone in c["gone"]:
        assert gone not in got, (gone, got)
    for kept in c["kept"]:
        assert kept in got, (kept, got)
    assert (MARK in got) == bool(c["gone"]), got
    assert redact(got) == got  # redacting twice changes nothing more


def test_a_tail_never_keeps_half_of_a_value() -> None:
    secret = "v" * 40 + "-the-tail-end-of-a-secret"
    redact = Redactor.of({"SOME_VALUE": secret})
    # the secret ends exactly where the kept characters begin
    raw = ("x" * 100 + "\n") * 5 + secret + "y" * (TAIL_CHARS - 10)
    kept = tail(raw.encode(), redact)
    assert "the-tail-end" not in kept and "vvvv" not in kept
    assert len(kept) <= TAIL_CHARS
    lines = "\n".join(f"line {i}" for i in range(100))
    assert tail(lines, redact).splitlines() == [f"line {i}" for i in range(80, 100)]
    assert tail(b"", redact) == ""
