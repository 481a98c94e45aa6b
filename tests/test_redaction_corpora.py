"""Redaction on the bundled corpora fires exactly where each hit was read and judged by hand: a CI
database password in the labelled set, the trace sample's planted credentials (its data card
lists them), the e-mail addresses in the real Claude Code sessions. None is a false positive. A new
hit fails here until it has been read and listed: as a true positive, or as a false positive
counted against the rate docs/operations.md quotes
(`python -m memeval redaction-scan --show`)."""

from __future__ import annotations

import pytest

from memeval.cli.redaction_scan import main
from memeval.data.redaction_scan import CORPORA, scan

TRUE_POSITIVES: dict[str, dict[tuple[str, str], set[str]]] = {
    "labelled": {
        # `POSTGRES_PASSWORD: ci` and `postgresql://ci:ci@localhost` in a CI workflow
        ("wg-0040", "assistant_response"): {"password_assignment", "uri_credentials"},
    },
    "trace sample": {
        ("hf:6059d02c-4d39-4075-8233-b87bbac16bad", "assistant_response"): {"stripe_key"},
        ("hf:ee14860f-8490-438e-4b0b-944848a2fe8a", "user_prompt"): {
            "aws_access_key_id", "aws_secret_access_key"},
        ("hf:28c87762-c304-4355-db17-7bc33d18af31", "assistant_response"): {"github_token"},
        ("hf:62db7312-7275-4fa4-823a-ac7e23a5db68", "assistant_response"): {"uri_credentials"},
        ("hf:5d089fa2-c8f3-4451-8058-e4b0c8241e51", "user_prompt"): {"email"},
        ("hf:5d089fa2-c8f3-4451-8058-e4b0c8241e51", "assistant_response"): {"email"},
    },
    "claude code": {  # a gmail and two GitHub no-reply addresses, in a git-attribution fix
        (f"6dc88126-2048-43a9-b5c2-b9747d5a0301:{uuid}", field): {"email"}
        for uuid, field in (("3bf8cea5-b31d-4e7c-972e-59047e782318:0", "user_prompt"),
                            ("e3737616-df41-4f6f-ac32-c18ecd769058:0", "assistant_response"))
    } | {
        (f"dc7e9081-a507-4c59-9c3b-f9b714e4a44c:{uuid}", field): {"email"}
        for uuid, field in (("8af78f01-1f71-4de1-b197-8c867f72008f:0", "assistant_response"),
                            ("387c37d6-1252-4156-a8ea-3ccb6a310404:0", "assistant_response"),
                            ("b11117bd-fa70-443e-974c-919d24cde3d7:0", "assistant_response"),
                            ("40350f88-c491-4136-be11-153d5030f274:0", "user_prompt"),
                            ("40350f88-c491-4136-be11-153d5030f274:0", "assistant_response"))
    },
}
FALSE_POSITIVES: dict[str, dict[tuple[str, str], set[str]]] = {corpus: {} for corpus in CORPORA}


@pytest.mark.parametrize("corpus", list(CORPORA))
def test_redaction_fires_only_where_checked_by_hand(corpus: str) -> None:
    scanned, hits = scan(CORPORA[corpus]())
    found = {(hit.entry_id, hit.field): set(hit.counts) for hit in hits}
    assert scanned > 400
    assert found == TRUE_POSITIVES[corpus] | FALSE_POSITIVES[corpus]


def test_scan_command_prints_counts_and_contexts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--show"]) == 0
    out = capsys.readouterr().out
    assert "trace sample: " in out and "redaction fired in 6 " in out
    assert "STRIPE_SECRET_KEY=[REDACTED:stripe_key]" in out
