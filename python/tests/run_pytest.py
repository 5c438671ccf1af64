"""ctest's entry to the pytest suite (python/CMakeLists.txt): reports the suite skipped (exit 77)
when this interpreter lacks pytest or numpy, unless GLASS_REQUIRE_FIXTURES=1 (CI), where that fails."""
import importlib.util
import os
import sys

missing = [m for m in ("pytest", "numpy") if importlib.util.find_spec(m) is None]
if missing:
    print(f"skipped: {sys.executable} has no {' or '.join(missing)} (Debian: python3-pytest python3-numpy)")
    sys.exit(1 if os.environ.get("GLASS_REQUIRE_FIXTURES") == "1" else 77)

import pytest  # noqa: E402

sys.exit(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", *sys.argv[1:]]))
