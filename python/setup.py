"""The glass package: builds the extension glass._glass with CMake from this repository and
installs it beside glass/__init__.py. Offline:

    pip install --no-build-isolation ./python

Needs CMake, Ninja (or make), a C++20 compiler, pybind11 (Debian: pybind11-dev) and glass's build
dependencies (scripts/install-deps.sh). GLASS_CMAKE_BUILD_DIR reuses a build folder between
installs; CMAKE_BUILD_PARALLEL_LEVEL caps the build's jobs.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("GLASS_SOURCE_DIR", HERE.parent)).resolve()


def project_version() -> str:
    text = (SOURCE / "CMakeLists.txt").read_text()
    m = re.search(r"project\(glass VERSION ([0-9.]+)", text)
    return m.group(1) if m else "0.0.0"


class CMakeExtension(Extension):
    def __init__(self, name: str):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        if not (SOURCE / "CMakeLists.txt").is_file():
            raise RuntimeError(f"glass: no CMakeLists.txt in {SOURCE} (set GLASS_SOURCE_DIR to the repository)")
        build = Path(os.environ.get("GLASS_CMAKE_BUILD_DIR", Path(self.build_temp).resolve() / "cmake"))
        configure = ["cmake", "-S", str(SOURCE), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                     "-DGLASS_BUILD_PYTHON=ON", "-DGLASS_BUILD_TESTS=OFF", "-DGLASS_BUILD_TOOLS=OFF",
                     "-DGLASS_BUILD_CLI=OFF", "-DGLASS_INSTALL=OFF",
                     f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja") and not (build / "Makefile").exists():
            configure += ["-G", "Ninja"]
        subprocess.run(configure, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build), "--target", "_glass", "-j", jobs], check=True)
        built = sorted((build / "python" / "glass").glob("_glass*.so"))
        if not built:
            raise RuntimeError(f"glass: the build left no _glass*.so in {build / 'python' / 'glass'}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], target)


setup(
    name="glass",
    version=project_version(),
    description="glass: a C++20 LLM runtime (load, tokenize, evaluate, generate), from Python",
    python_requires=">=3.8",
    install_requires=["numpy"],
    packages=["glass"],
    package_dir={"glass": "glass"},
    package_data={"glass": ["*.pyi", "py.typed"]},
    ext_modules=[CMakeExtension("glass._glass")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
