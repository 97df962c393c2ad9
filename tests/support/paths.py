"""Where the tests find the checkout and their own data, wherever a test module sits."""

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = TESTS_DIR.parent
