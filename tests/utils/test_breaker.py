"""The circuit breaker the HTTP judges and the daemon client share."""

from __future__ import annotations

from memeval.utils.http_retry import Breaker


def test_it_opens_on_the_nth_failure_in_a_row_and_remembers_why() -> None:
    breaker = Breaker(3)
    assert [breaker.failed(f"503 #{i}") for i in range(5)] == [False, False, True, False, False]
    assert breaker.open_because == "503 #2"


def test_a_success_starts_the_count_again() -> None:
    breaker = Breaker(2)
    assert not breaker.failed("timeout")
    breaker.succeeded()
    assert not breaker.failed("timeout") and breaker.open_because is None
    assert breaker.failed("timeout") and breaker.open_because == "timeout"


def test_zero_never_opens() -> None:
    breaker = Breaker(0)
    assert not any(breaker.failed("down") for _ in range(50))
    assert breaker.open_because is None
