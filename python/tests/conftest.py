"""Shared fixtures of the glass Python suite. Run it through ctest (glass_python_test), or by hand:
PYTHONPATH=build/python python3 -m pytest python/tests (GLASS_BIN names the glass command)."""
import os
import shutil
from pathlib import Path

import pytest

import glass

SOURCE = Path(os.environ.get("GLASS_SOURCE_DIR", Path(__file__).resolve().parents[2]))
MODEL = SOURCE / "models" / "stories260K.gguf"
THREADS = 2  # the same in Python and in the glass command, for bit-exact comparisons


@pytest.fixture(scope="session")
def model():
    return glass.load(MODEL, threads=THREADS)


@pytest.fixture(scope="session")
def glass_bin():
    path = os.environ.get("GLASS_BIN") or shutil.which("glass")
    if not path or not Path(path).is_file():
        pytest.skip("the glass command is not built (GLASS_BIN)")
    return path


@pytest.fixture(scope="session")
def fixtures_dir():
    """../shared/fixtures: skipped when absent, a failure with GLASS_REQUIRE_FIXTURES=1."""
    path = Path(os.environ.get("GLASS_FIXTURES") or os.environ.get("GLASS_FIXTURES_DIR")
                or SOURCE.parent / "shared" / "fixtures")
    if not (path / "reference").is_dir():
        if os.environ.get("GLASS_REQUIRE_FIXTURES") == "1":
            pytest.fail(f"shared fixtures required but not found at {path} (set GLASS_FIXTURES)")
        pytest.skip(f"shared fixtures not found at {path}: set GLASS_FIXTURES or place them at ../shared/fixtures")
    return path
