"""The linter is part of the suite: ruff over the package, the tests and the benchmarks
(settings in pyproject.toml: pyflakes' errors, pycodestyle's, lines up to 120)."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_ruff_finds_nothing_in_the_package_tests_and_benchmarks():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           "workbench", "tests", "bench"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"ruff found problems (fix them, or `ruff check --fix`):\n{proc.stdout}{proc.stderr}"
    assert "All checks passed" in proc.stdout
