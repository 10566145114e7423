"""Precompiled standard headers for the tests that build many small C++
programs with the system compiler (the emulated kernels, the host parts of
the CUDA code generator's output): parsing the standard headers took most of
each build (emulated kernels 1.8 -> 0.9 s, host parts 1.1 -> 0.3 s)."""

import atexit
import os
import shutil
import subprocess
import tempfile

_built = {}


def compiler():
    return os.environ.get("PLAIT_CXX") or os.environ.get("CXX") or "c++"


def header_dir(name, headers, flags):
    """A directory holding `name` (which includes `headers`) and its
    precompiled form for `flags`, built once per process; compile with
    `-I DIR -include NAME` and the same flags (GCC ignores a precompiled
    header whose flags differ and parses the headers instead)."""
    key = (compiler(), name, tuple(headers), tuple(flags))
    if key not in _built:
        where = tempfile.mkdtemp(prefix="plait-pch-")
        atexit.register(shutil.rmtree, where, True)
        header = os.path.join(where, name)
        with open(header, "w") as f:
            f.write("".join(f"#include <{h}>\n" for h in headers))
        built = subprocess.run([compiler(), *flags, "-x", "c++-header", "-o", header + ".gch", header],
                               capture_output=True, text=True)
        assert built.returncode == 0, built.stderr
        _built[key] = where
    return _built[key]
