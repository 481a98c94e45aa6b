"""Problems met record by record (a bad line, a duplicate id, a query naming an unknown memory),
aggregated: every one is counted, the first few of each kind are kept with their place and
reason, and the rest are told as one line per kind. A file of a million bad lines then costs
counters and a few messages, not a million warnings in the console and the log."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memeval.utils.redact import redact

SHOWN_PER_KIND = 5  # examples kept of each kind of problem
MAX_KINDS = 16  # kinds told apart; any further kind is counted as OTHER
OTHER = "other problems"
# What differs between records with the same problem: quoted values (ids, fields) and numbers
# (line numbers, positions); the rest of a message is its kind.
_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\d+")


@dataclass
class Problems:
    """The problems met so far. At most MAX_KINDS * (SHOWN_PER_KIND + 1) lines are ever told
    (`lines`), within the 100 a run's metrics.json keeps."""

    count: int = 0  # every problem, kept or not
    examples: list[str] = field(default_factory=list)  # redacted: they quote the bad record
    kinds: dict[str, int] = field(default_factory=dict)  # problems of each kind
    firsts: dict[str, str] = field(default_factory=dict)  # each kind's first example

    def add(self, where: str, reason: str) -> None:
        """One problem at `where` (`FILE:LINE`, `FILE: sample 3`): counted; kept as an example
        (redacted) while its kind has fewer than SHOWN_PER_KIND."""
        self.count += 1
        message = f"{where}: {reason}"
        kind = self._kind(_VARYING.sub("…", message))
        seen = self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if seen <= SHOWN_PER_KIND:
            self.examples.append(redact(message))
            self.firsts.setdefault(kind, self.examples[-1])

    def _kind(self, kind: str) -> str:
        """`kind`, or OTHER once MAX_KINDS - 1 others are told apart."""
        return kind if kind in self.kinds or len(self.kinds) < MAX_KINDS - 1 else OTHER

    def absorb(self, other: Problems) -> None:
        """Another reader's problems counted here too (a dataset combined from two sources)."""
        self.count += other.count
        room = MAX_KINDS * SHOWN_PER_KIND - len(self.examples)
        self.examples += other.examples[:max(room, 0)]
        for kind, n in other.kinds.items():
            mine = self._kind(kind)
            self.kinds[mine] = self.kinds.get(mine, 0) + n
            self.firsts.setdefault(mine, other.firsts[kind])

    def lines(self) -> list[str]:
        """What to tell: the examples in the order met, then, for each kind with more problems
        than examples, how many there were in all."""
        repeated = [f"{n} in all {'of other kinds, such as' if kind == OTHER else 'like'} "
                    f"{self.firsts[kind]}"
                    for kind, n in self.kinds.items() if n > SHOWN_PER_KIND]
        return [*self.examples, *repeated]
