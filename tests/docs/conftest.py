"""The docs tests: every snippet of README.md and docs/*.md runs, every reference resolves."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the tests import docs_blocks and docs_runner
