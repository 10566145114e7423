"""The extension module plait._core exports its init function, not the code
of the static archives it links (plait_core, and the C++ runtime where the
toolchain links libstdc++ statically).

An exported copy of the C++ runtime is bound, at load time, to whichever
libstdc++ the process mapped first (numpy maps the system's): the module
then mixed two versions' locale objects, and every CUDA compile crashed on
the GPU machine, whose /opt/gcc/bin/g++ links libstdc++ statically.
"""

import shutil
import subprocess
import sys

import pytest

import plait._core


def exported_symbols():
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("binutils' nm is not installed")
    listing = subprocess.run([nm, "-D", "--defined-only", plait._core.__file__], check=True, capture_output=True,
                             text=True).stdout
    return [line.split()[-1] for line in listing.splitlines() if line.strip()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF symbol tables only")
def test_the_module_exports_its_init_function_and_no_compiler_or_stream_code():
    symbols = exported_symbols()
    # The listing is the module's (an empty one would hide any leak).
    assert "PyInit__core" in symbols
    # _ZN5plait: namespace plait; _ZNSo / _ZNSi / _ZNSt6locale: std::ostream,
    # std::istream and std::locale members, defined in libstdc++ itself.
    leaked = [s for s in symbols if s.startswith(("_ZN5plait", "_ZNSo", "_ZNSi", "_ZNSt6locale"))]
    assert leaked == [], f"{len(leaked)} symbols exported, first {leaked[:5]}"
