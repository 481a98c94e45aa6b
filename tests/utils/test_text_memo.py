from memeval.utils.text_memo import TextMemo


def counting_upper() -> tuple[TextMemo, list[str]]:
    computed: list[str] = []

    def upper(text: str) -> str:
        computed.append(text)
        return text.upper()

    return TextMemo(upper, max_chars=20), computed


def test_a_remembered_text_is_not_computed_again() -> None:
    memo, computed = counting_upper()
    assert [memo("abc"), memo("abc"), memo("de")] == ["ABC", "ABC", "DE"]
    assert computed == ["abc", "de"]


def test_the_least_recently_used_texts_go_when_the_budget_is_spent() -> None:
    memo, computed = counting_upper()
    for text in ("aaaa", "bbbb", "aaaa", "cccc"):  # each holds 8 characters; 20 fit two
        memo(text)
    assert len(memo) == 2
    memo("aaaa")  # used more recently than bbbb, so kept
    memo("bbbb")
    assert computed == ["aaaa", "bbbb", "cccc", "bbbb"]


def test_a_text_over_the_budget_is_computed_every_time_and_evicts_nothing() -> None:
    memo, computed = counting_upper()
    memo("ab")
    long = "x" * 11
    assert memo(long) == long.upper() and memo(long) == long.upper()
    memo("ab")
    assert computed == ["ab", long, long]
