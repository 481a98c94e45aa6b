"""A function of a text, remembered for recent texts within a budget of characters.

A count bound (`lru_cache`) either thrashes when a pass holds more texts than it keeps, or holds
unbounded memory when texts are long; a character budget keeps what fits, whatever the mix.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable


class TextMemo:
    def __init__(self, compute: Callable[[str], str], max_chars: int) -> None:
        self._compute = compute
        self._max_chars = max_chars
        self._held: OrderedDict[str, str] = OrderedDict()  # least recently used first
        self._chars = 0
        self._lock = threading.Lock()  # servers redact from their handler threads

    def __call__(self, text: str) -> str:
        with self._lock:
            value = self._held.get(text)
            if value is not None:
                self._held.move_to_end(text)
                return value
        value = self._compute(text)
        size = len(text) + len(value)
        if size > self._max_chars:
            return value
        with self._lock:
            if text not in self._held:
                self._held[text] = value
                self._chars += size
            while self._chars > self._max_chars:
                old, old_value = self._held.popitem(last=False)
                self._chars -= len(old) + len(old_value)
        return value

    def __len__(self) -> int:
        return len(self._held)
