"""Phoenix stays out of memeval's import path: importing it costs ~10 s and 400 MB."""

from __future__ import annotations

import subprocess
import sys


def test_running_an_experiment_imports_neither_phoenix_nor_opentelemetry() -> None:
    probe = ("import sys, memeval.runner, memeval.engine.gate.gate, memeval.config; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('phoenix', 'opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_pushing_never_imports_the_phoenix_package() -> None:
    probe = ("import sys, memeval.reporting.phoenix.push, memeval.reporting.phoenix.server; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'phoenix'))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
