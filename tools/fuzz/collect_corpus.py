"""Writes the fuzzer's seed corpus from the kernels the tests compile.

    .venv/bin/python tools/fuzz/collect_corpus.py OUT_DIR [pytest arguments]

Runs pytest (default: tests/python tests/gpu tests/cli) with plait._core.compile
replaced by a recorder that keeps the kernel (its source, the modules and
constants it sees, the signature and the target) and then raises, so no
kernel is built and the run takes a minute; the tests fail, which is
expected. Each distinct kernel source becomes one input in the fuzzer's
format (tools/fuzz/fuzz_compiler.cpp): a `#fuzz` line, the imports and
constants as module lines, then the function. tests/cli/kernels/*.py are
added too, one input per function with a signature from CLI_SIGNATURES.
"""

import hashlib
import math
import os
import pathlib
import re
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# The functions of tests/cli/kernels and a signature each.
CLI_SIGNATURES = {
    "scale": "f64[::1], f64[::1]",
    "total": "f64[::1]",
    "broken": "f64[::1]",
}


class _Recorded(Exception):
    pass


def _module_lines(modules, constants):
    lines = []
    for alias, module in sorted(modules.items()):
        if module.startswith(("math.", "numpy.", "plait.")):
            package, name = module.split(".", 1)
            lines.append(f"from {package} import {name} as {alias}")
        else:
            lines.append(f"import {module} as {alias}")
    for name, value in sorted(constants.items()):
        if isinstance(value, float) and not math.isfinite(value):
            continue  # no literal spells it; the kernel then meets an unknown name
        lines.append(f"{name} = {value!r}")
    return lines


def _input_text(name, signature, target, modules, constants, text):
    header = f"#fuzz {name} {target} : {signature}"
    body = textwrap.dedent(text)
    return "\n".join([header, *_module_lines(modules, constants), "", body])


class Recorder:
    def __init__(self):
        self.inputs = {}

    def pytest_configure(self, config):
        from plait import _core

        def record(*, text, name, signature, modules, constants, target="cpu", **unused):
            key = (textwrap.dedent(text), target)
            if key not in self.inputs:
                self.inputs[key] = _input_text(name, signature, target, modules, constants, text)
            raise _Recorded(name)

        _core.compile = record


def _cli_inputs():
    inputs = []
    for path in sorted((ROOT / "tests/cli/kernels").glob("*.py")):
        text = path.read_text()
        for name in re.findall(r"^def (\w+)\(", text, re.M):
            signature = CLI_SIGNATURES.get(name, "f64[::1]")
            inputs.append(f"#fuzz {name} cpu : {signature}\n{text}")
    return inputs


def _with_cuda_twins(inputs):
    """The inputs and, for one CPU kernel in four (by hash), the same kernel
    for the CUDA target: the GPU tests skip before compiling on machines
    without a GPU, so the CUDA back end gets its seeds from here."""
    twins = []
    for text in inputs:
        header, _, rest = text.partition("\n")
        if " cpu : " in header and hashlib.sha1(text.encode()).digest()[0] % 4 == 0:
            twins.append(header.replace(" cpu : ", " cuda : ") + "\n" + rest)
    return inputs + twins


def main():
    out = pathlib.Path(sys.argv[1])
    args = sys.argv[2:] or [str(ROOT / d) for d in ("tests/python", "tests/gpu", "tests/cli")]
    recorder = Recorder()
    os.environ.setdefault("PLAIT_CACHE_DIR", str(out / ".cache-unused"))
    pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--tb=no", "--no-header", "-rN", *args],
                plugins=[recorder])
    out.mkdir(parents=True, exist_ok=True)
    inputs = _with_cuda_twins(list(recorder.inputs.values()) + _cli_inputs())
    for text in inputs:
        data = text.encode()
        (out / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)
    print(f"{len(inputs)} inputs in {out}")


if __name__ == "__main__":
    main()
