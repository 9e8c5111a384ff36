"""Make the chart tests' helper modules importable (they live beside the tests)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
