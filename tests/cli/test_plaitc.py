"""Tests of the plaitc driver: outputs, the shared object it builds (called
through ctypes with the C ABI of src/runtime/abi.h) and its exit codes."""
import ctypes
import os
import pathlib
import stat
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
KERNELS = HERE / "kernels"
VECTOR_OPS = KERNELS / "vector_ops.py"
# The plaitc installed beside this Python (make test sets PLAIT_PLAITC to it).
PLAITC = pathlib.Path(os.environ.get("PLAIT_PLAITC", pathlib.Path(sys.executable).with_name("plaitc")))

pytestmark = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")

MAX_NDIM = 4


class PlaitArray(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * MAX_NDIM),
                ("strides", ctypes.c_int64 * MAX_NDIM)]


class PlaitResult(ctypes.Structure):
    _fields_ = [("is_array", ctypes.c_int32), ("dtype", ctypes.c_int32), ("i64", ctypes.c_int64),
                ("f64", ctypes.c_double), ("b", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("array", PlaitArray), ("owner", ctypes.c_void_p), ("release", ctypes.c_void_p)]


class PlaitContext(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("error_kind", ctypes.c_int32), ("error_line", ctypes.c_int32),
                ("error_col", ctypes.c_int32), ("error_message", ctypes.c_char * 240), ("cuda", ctypes.c_void_p),
                ("parallel_work_threshold", ctypes.c_int64), ("memory", ctypes.c_void_p),
                ("interrupt", ctypes.c_void_p)]


def run_plaitc(*args, env_extra=None, cwd=None):
    env = dict(os.environ)
    env.pop("PLAIT_DUMP_DIR", None)
    env.update(env_extra or {})
    return subprocess.run([str(PLAITC), *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


def build_so(tmp_path, cache_dir, name, signature, *extra):
    out = tmp_path / "out"
    result = run_plaitc("compile", f"{VECTOR_OPS}::{name}", "--signature", signature, "--emit", "so", "-o", out,
                        *extra, env_extra={"PLAIT_CACHE_DIR": str(cache_dir)})
    assert result.returncode == 0, result.stderr
    library = out / f"{name}.so"
    assert library.is_file()
    return library


def contiguous_array(values):
    buffer = (ctypes.c_double * len(values))(*values)
    array = PlaitArray()
    array.data = ctypes.cast(buffer, ctypes.c_void_p)
    array.shape[0] = len(values)
    array.strides[0] = 1
    return buffer, array


def call(library_path, arrays):
    library = ctypes.CDLL(str(library_path))
    library.plait_kernel_abi_version.restype = ctypes.c_int32
    assert library.plait_kernel_abi_version() == 12
    entry = library.plait_kernel_entry
    entry.restype = ctypes.c_int32
    entry.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(PlaitResult), ctypes.POINTER(PlaitContext)]
    args = (ctypes.c_void_p * len(arrays))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in arrays])
    results = (PlaitResult * 2)()
    context = PlaitContext(num_threads=2)
    status = entry(args, results, ctypes.byref(context))
    return status, results, context


def test_version():
    result = run_plaitc("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("plaitc ")
    assert "+abi12" in result.stdout


def test_help():
    result = run_plaitc("--help")
    assert result.returncode == 0
    assert "usage: plaitc compile" in result.stdout
    assert "--signature" in result.stdout


@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["compile"],
    ["compile", f"{VECTOR_OPS}::scale"],                                   # no --signature
    ["compile", str(VECTOR_OPS), "--signature", "f64[::1], f64[::1]"],    # no ::FUNCTION
    ["compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "asm"],
    ["compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--bogus"],
    ["compile", f"{VECTOR_OPS}::scale", "--signature", "f99[::1]"],
    ["compile", f"{VECTOR_OPS}::scale", "--signature"],
])
def test_bad_usage_exits_64_with_usage(args, tmp_path):
    result = run_plaitc(*args, cwd=tmp_path)
    assert result.returncode == 64, result.stderr
    assert "usage: plaitc compile" in result.stderr


def test_disable_pass_leaves_an_optional_pass_out():
    base = ["compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "remarks"]
    result = run_plaitc(*base, "--disable-pass", "fuse_loop_nests", "--disable-pass", "offload_matmul")
    assert result.returncode == 0, result.stderr
    assert "pass fuse_loop_nests not run: disabled by request" in result.stdout
    assert "pass offload_matmul not run: disabled by request" in result.stdout
    refused = run_plaitc(*base, "--disable-pass", "detect_reductions")
    assert refused.returncode == 64
    assert "'detect_reductions' is not an optional pass of the cpu target; optional: hoist_invariant_arrays" \
        in refused.stderr


def test_unreadable_file_exits_66(tmp_path):
    result = run_plaitc("compile", f"{tmp_path / 'missing.py'}::f", "--signature", "f64")
    assert result.returncode == 66
    assert "missing.py" in result.stderr


def test_emit_ir_to_stdout():
    result = run_plaitc("compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "ir")
    assert result.returncode == 0, result.stderr
    assert "scale" in result.stdout
    assert "parallel for" in result.stdout


def test_emit_ir_to_directory(tmp_path):
    result = run_plaitc("compile", f"{VECTOR_OPS}::total", "--signature", "f64[::1]", "--emit", "ir",
                        "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    text = (tmp_path / "out" / "total.ir").read_text()
    assert "reduction" in text


def test_emit_remarks_without_building(tmp_path):
    base = ["compile", f"{VECTOR_OPS}::total", "--signature", "f64[::1]", "--emit", "remarks"]
    cpu = run_plaitc(*base, "--cache-dir", tmp_path / "cache")
    assert cpu.returncode == 0, cpu.stderr
    assert "vector_ops.py:17: parallel loop over 'i', reduction(+: s)" in cpu.stdout.splitlines()
    assert "CUDA" not in cpu.stdout
    assert not (tmp_path / "cache").exists()  # nothing was built
    # The CUDA code generator's choices, on a machine without a GPU.
    cuda = run_plaitc(*base, "--target", "cuda", "-o", tmp_path / "out")
    assert cuda.returncode == 0, cuda.stderr
    text = (tmp_path / "out" / "total.remarks").read_text()
    assert "parallel loop over `i`: CUDA kernel plait_total_k0" in text
    assert "reduction of `s` on the GPU" in text


def test_emit_cpp_to_stdout():
    result = run_plaitc("compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "cpp")
    assert result.returncode == 0, result.stderr
    assert "plait_kernel_entry" in result.stdout
    assert "plait_kernel_abi_version" in result.stdout
    assert "#pragma omp" in result.stdout
    assert "vector_ops.py" in result.stdout  # #line directives


def test_boundscheck_is_the_cpu_default_and_no_boundscheck_turns_it_off():
    base = ["compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "cpp"]
    default = run_plaitc(*base)
    checked = run_plaitc(*base, "--boundscheck")
    plain = run_plaitc(*base, "--no-boundscheck")
    assert default.returncode == 0 and checked.returncode == 0 and plain.returncode == 0
    assert default.stdout == checked.stdout
    assert plain.stdout != checked.stdout


CUDA_SCALE = ["compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--target", "cuda"]


def test_cuda_launch_options_reach_the_generated_code():
    default = run_plaitc(*CUDA_SCALE, "--emit", "cu")
    tuned = run_plaitc(*CUDA_SCALE, "--emit", "cu", "--cuda-threads", "512", "--cuda-row-groups=2",
                       "--cuda-max-team", "128")
    assert default.returncode == 0 and tuned.returncode == 0, default.stderr + tuned.stderr
    assert "// launch configuration: threads 256, row groups 4, largest team 256" in default.stdout
    assert "__launch_bounds__(256)" in default.stdout
    assert "// launch configuration: threads 512, row groups 2, largest team 128" in tuned.stdout
    assert "__launch_bounds__(512)" in tuned.stdout and "__launch_bounds__(256)" not in tuned.stdout
    host = run_plaitc(*CUDA_SCALE, "--emit", "cpp", "--cuda-threads", "1024")
    assert host.returncode == 0, host.stderr
    assert ", 1024, 65536), 1024, " in host.stdout  # grid_for(..., block, cap), then the block of the launch


@pytest.mark.parametrize("args,message", [
    (["--cuda-threads", "96"], "threads (per block) must be 64, 128, 256, 512 or 1024, not 96"),
    (["--cuda-threads", "2048"], "not 2048"),
    (["--cuda-threads", "12x"], "--cuda-threads takes a number, not '12x'"),
    (["--cuda-row-groups", "3"], "row_groups must be 1, 2, 4 or 8, not 3"),
    (["--cuda-max-team", "512"], "max_team must be a power of two from 32 to threads (256), not 512"),
    (["--cuda-max-team", "16", "--cuda-threads", "64"], "not 16"),
])
def test_bad_cuda_launch_options_exit_64(args, message):
    result = run_plaitc(*CUDA_SCALE, "--emit", "cu", *args)
    assert result.returncode == 64, result.stderr
    assert message in result.stderr


def test_cuda_launch_options_need_the_cuda_target():
    result = run_plaitc("compile", f"{VECTOR_OPS}::scale", "--signature", "f64[::1], f64[::1]", "--emit", "ir",
                        "--cuda-threads", "512")
    assert result.returncode == 64
    assert "are for --target cuda" in result.stderr


def test_shared_object_runs_and_uses_module_constant(tmp_path, cache_dir):
    library = build_so(tmp_path, cache_dir, "scale", "f64[::1], f64[::1]")
    x_buffer, x = contiguous_array([1.0, 2.0, -4.0, 0.5])
    y_buffer, y = contiguous_array([0.0] * 4)
    status, _, _ = call(library, [x, y])
    assert status == 0
    assert list(y_buffer) == [2.5, 5.0, -10.0, 1.25]


def test_shared_object_returns_scalar(tmp_path, cache_dir):
    library = build_so(tmp_path, cache_dir, "total", "f64[::1]")
    values = [float(i) for i in range(1000)]
    x_buffer, x = contiguous_array(values)
    status, results, _ = call(library, [x])
    assert status == 0
    assert results[0].is_array == 0
    assert results[0].f64 == pytest.approx(sum(values))


def entries_holding(cache_dir, name):
    return [p for p in cache_dir.glob("*/*") if p.is_dir() and (p / name).exists()]


def compiler_is_gcc():
    cxx = os.environ.get("PLAIT_CXX") or os.environ.get("CXX") or "c++"
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout
    return "clang" not in version.splitlines()[0]


def test_disk_cache_is_filled_and_reused(tmp_path, cache_dir):
    build_so(tmp_path, cache_dir, "total", "f64[::1]")
    entries = entries_holding(cache_dir, "kernel.so")
    assert len(entries) == 1
    entry = entries[0]
    assert entry.name.startswith(entry.parent.name) and len(entry.name) == 64
    assert {"kernel.cpp", "kernel.so", "kernel.sha256", "build.log"} <= {p.name for p in entry.iterdir()}
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    # With g++, the runtime the kernel begins with is precompiled once per
    # toolchain into an entry of its own, which the kernel's build included.
    runtimes = 1 if compiler_is_gcc() else 0
    assert len(entries_holding(cache_dir, "plait_runtime.h.gch")) == runtimes
    assert (entry / "kernel_pch.cpp").exists() == bool(runtimes)
    mtime = (entry / "kernel.so").stat().st_mtime_ns
    build_so(tmp_path, cache_dir, "total", "f64[::1]")
    assert (entry / "kernel.so").stat().st_mtime_ns == mtime
    assert len(entries_holding(cache_dir, "kernel.so")) == 1
    build_so(tmp_path, cache_dir, "total", "f64[::1]", "--fastmath")
    assert len(entries_holding(cache_dir, "kernel.so")) == 2
    assert len(entries_holding(cache_dir, "plait_runtime.h.gch")) == 2 * runtimes


def test_corrupted_cache_entry_is_rebuilt(tmp_path, cache_dir):
    build_so(tmp_path, cache_dir, "total", "f64[::1]")
    (library_in_cache,) = cache_dir.glob("*/*/kernel.so")
    data = bytearray(library_in_cache.read_bytes())
    data[len(data) // 2] ^= 0xFF
    library_in_cache.write_bytes(bytes(data))
    library = build_so(tmp_path, cache_dir, "total", "f64[::1]")
    x_buffer, x = contiguous_array([1.0, 2.0])
    status, results, _ = call(library, [x])
    assert status == 0 and results[0].f64 == 3.0


def test_no_cache_leaves_cache_untouched(tmp_path, cache_dir):
    library = build_so(tmp_path, cache_dir, "total", "f64[::1]", "--no-cache")
    assert not cache_dir.exists()
    x_buffer, x = contiguous_array([4.0, 5.0])
    status, results, _ = call(library, [x])
    assert status == 0 and results[0].f64 == 9.0


def test_dump_dir(tmp_path, cache_dir):
    dump = tmp_path / "dump"
    build_so(tmp_path, cache_dir, "scale", "f64[::1], f64[::1]", "--dump-dir", dump)
    names = sorted(p.name for p in dump.iterdir())
    assert "scale.cpp" in names
    assert "scale.00.lower_to_ir.ir" in names
    # Every step is listed, in order; the IR is written after those that changed it.
    steps = (dump / "scale.passes").read_text().splitlines()
    assert steps[0] == "00 lower_to_ir"
    assert steps[1].startswith("01 split_variable_webs")
    assert steps[2].startswith("02 hoist_invariant_arrays")
    assert steps[3].startswith("03 fuse_loop_nests")
    changed = [line.split()[0] + "." + line.split()[1] for line in steps[1:] if not line.endswith("(unchanged)")]
    assert changed, steps
    assert all(f"scale.{step}.ir" in names for step in changed)
    assert not any(f"scale.{line.split()[0]}." in name for line in steps if line.endswith("(unchanged)")
                   for name in names)


def test_compile_error_exits_1_and_points_at_the_line(tmp_path):
    result = run_plaitc("compile", f"{KERNELS / 'undefined_name.py'}::broken", "--signature", "f64[::1]",
                        "--emit", "ir")
    assert result.returncode == 1
    assert "undefined_name.py" in result.stderr
    assert "line 6" in result.stderr
    assert "not_defined_anywhere" in result.stderr


def test_unknown_function_exits_1():
    result = run_plaitc("compile", f"{VECTOR_OPS}::no_such_kernel", "--signature", "f64", "--emit", "ir")
    assert result.returncode == 1
    assert "no_such_kernel" in result.stderr


def test_shared_cache_directory_is_refused_with_exit_2(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = run_plaitc("compile", f"{VECTOR_OPS}::total", "--signature", "f64[::1]", "-o", tmp_path / "out",
                        "--cache-dir", shared)
    assert result.returncode == 2
    assert str(shared) in result.stderr


def test_missing_compiler_exits_2(tmp_path, cache_dir):
    result = run_plaitc("compile", f"{VECTOR_OPS}::total", "--signature", "f64[::1]", "-o", tmp_path / "out",
                        "--cxx", "plait-no-such-compiler", env_extra={"PLAIT_CACHE_DIR": str(cache_dir)})
    assert result.returncode == 2
    assert "plait-no-such-compiler" in result.stderr


# Kernels whose generated text followed the order of heap addresses before the
# compiler's sets and maps of variables and arrays were ordered by creation
# (ir::InfoOrder): two reductions of one loop, the error counters of a
# parallel region, a row's extremes. glibc's malloc without its per-thread
# cache hands out addresses in another order; the text, which keys the disk
# cache, must not change.
CUDA_KERNELS = HERE.parent / "gpu" / "cuda_kernels.py"
HEAP_ORDER_CASES = [
    ("masked_means", "f64[::1], f64[::1], int", "cuda", "cu"),
    ("masked_means", "f64[::1], f64[::1], int", "cpu", "cpp"),
    ("jacobi_1d_slices", "int, f64[::1], f64[::1]", "cpu", "cpp"),
    ("row_int_extremes", "i32[:, ::1], i32[::1], i32[::1]", "cuda", "cu"),
    ("heat_3d_slices", "int, f64[:, :, ::1], f64[:, :, ::1]", "cpu", "cpp"),
]


@pytest.mark.parametrize("name,signature,target,emit", HEAP_ORDER_CASES)
def test_generated_text_does_not_depend_on_heap_addresses(name, signature, target, emit):
    outputs = [run_plaitc("compile", f"{CUDA_KERNELS}::{name}", "--signature", signature, "--target", target,
                          "--emit", emit, env_extra=extra)
               for extra in ({}, {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"})]
    assert outputs[0].returncode == 0, outputs[0].stderr
    assert outputs[0].stdout == outputs[1].stdout


# Deep input: the compiler refuses expressions nested more than 200 levels
# (support/compiler_stack.h) with exit status 1, at the construct that crosses
# the limit, and runs on a thread of its own, so the stack of plaitc's main
# thread (ulimit -s) does not matter.
DEEP_PREFIX = "    return "
DEEP_EXPRESSIONS = {
    # kind: (expression of depth n, 0-based column of the token that crosses the limit)
    "parentheses": (lambda n: "(" * n + "x[0]" + ")" * n, len(DEEP_PREFIX) + 200),
    "subscripts": (lambda n: "x" + "[0]" * n, len(DEEP_PREFIX) + 1 + 3 * 199),
    "calls": (lambda n: "abs(" * n + "x[0]" + ")" * n, len(DEEP_PREFIX) + 4 * 200),
    "chain": (lambda n: " + ".join(["x[0]"] * n), len(DEEP_PREFIX) + len(" + ".join(["x[0]"] * 199)) + 1),
}


def deep_kernel_file(tmp_path, expression):
    path = tmp_path / "deep.py"
    path.write_text(f"import numpy as np\n\ndef deep(x):\n{DEEP_PREFIX}{expression}\n")
    return path


def limit_stack(size):
    """A preexec_fn that sets the child's stack limit (ulimit -s) to `size` bytes."""
    def apply():
        import resource
        resource.setrlimit(resource.RLIMIT_STACK, (size, size))
    return apply


@pytest.mark.parametrize("kind, depth", [("parentheses", 5000), ("subscripts", 5000), ("calls", 5000),
                                         ("chain", 12000)])
def test_deep_expression_exits_1_at_the_limit(tmp_path, kind, depth):
    expression, column = DEEP_EXPRESSIONS[kind]
    path = deep_kernel_file(tmp_path, expression(depth))
    result = run_plaitc("compile", f"{path}::deep", "--signature", "f64[::1]", "--emit", "ir")
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert f"line 4, col {column + 1}" in result.stderr, result.stderr[:300]
    assert "SyntaxError: expression nested too deeply" in result.stderr


# Subscripts are left out: a chain of them is a type error on an array long
# before the limit, and indices nested in indices stop at 8 levels (each level
# triples the compiler's work: tests/python/test_deep_nesting.py).
@pytest.mark.parametrize("kind", ["calls", "chain", "parentheses"])
def test_expression_at_the_limit_compiles_with_a_small_main_stack(tmp_path, cache_dir, kind):
    # Depth 198 keeps each kind within the limit; the main thread's 256 KiB
    # would not hold the compiler's recursion at this depth. --emit cpp: the
    # system C++ compiler, a child process, would inherit the small stack.
    expression, _ = DEEP_EXPRESSIONS[kind]
    path = deep_kernel_file(tmp_path, expression(198))
    env = dict(os.environ, PLAIT_CACHE_DIR=str(cache_dir))
    env.pop("PLAIT_DUMP_DIR", None)
    result = subprocess.run([str(PLAITC), "compile", f"{path}::deep", "--signature", "i64[::1]", "--emit", "cpp"],
                            capture_output=True, text=True, env=env, timeout=300,
                            preexec_fn=limit_stack(256 * 1024))
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert "deep" in result.stdout


def test_too_many_indentation_levels_exit_1(tmp_path):
    lines = ["def deep(x):"]
    for level in range(1, 120):
        lines.append("    " * level + "if x[0] > 0:")
    lines.append("    " * 120 + "x[0] = 1.0")
    path = tmp_path / "indented.py"
    path.write_text("\n".join(lines) + "\n")
    result = run_plaitc("compile", f"{path}::deep", "--signature", "f64[::1]", "--emit", "ir")
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert "SyntaxError: too many levels of indentation" in result.stderr
    assert "line 102," in result.stderr  # the 101st level


def test_utf8_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes("\ufeffimport numpy as np\n\ndef first(x):\n    return x[0]\n".encode("utf-8"))
    result = run_plaitc("compile", f"{path}::first", "--signature", "f64[::1]", "--emit", "ir")
    assert result.returncode == 0, result.stderr
    assert "first" in result.stdout


def test_utf8_byte_order_mark_keeps_first_line_columns(tmp_path):
    path = tmp_path / "bom_error.py"
    path.write_bytes("\ufeffdef broken(x): return x[0] + nowhere\n".encode("utf-8"))
    result = run_plaitc("compile", f"{path}::broken", "--signature", "f64[::1]", "--emit", "ir")
    assert result.returncode == 1, result.stderr
    column = "def broken(x): return x[0] + nowhere".index("nowhere")
    assert f"line 1, col {column + 1}" in result.stderr, result.stderr
    assert "\n" + " " * column + "^" in result.stderr, result.stderr


def test_caret_after_non_ascii_characters(tmp_path):
    path = tmp_path / "accents.py"
    source_line = '    é = 1.0; "€😀"; return x[0] + é + nowhere'
    path.write_text(f"def broken(x):\n{source_line}\n", encoding="utf-8")
    result = run_plaitc("compile", f"{path}::broken", "--signature", "f64[::1]", "--emit", "ir")
    assert result.returncode == 1, result.stderr
    column = source_line.index("nowhere")
    assert f"line 2, col {column + 1}" in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert lines[lines.index(source_line) + 1] == " " * column + "^~~~~~~", result.stderr


def test_help_lists_every_exit_status():
    result = run_plaitc("--help")
    assert result.returncode == 0
    for status in ("0 ", "1 ", "2 ", "64 ", "66 "):
        assert f"\n  {status}" in result.stdout, result.stdout


def test_directory_as_input_exits_66(tmp_path):
    result = run_plaitc("compile", f"{tmp_path}::f", "--signature", "f64", "--emit", "ir")
    assert result.returncode == 66, result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_unwritable_standard_output_exits_2():
    with open("/dev/full", "w") as full:
        result = subprocess.run([str(PLAITC), "compile", f"{VECTOR_OPS}::total", "--signature", "f64[::1]",
                                 "--emit", "ir"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "cannot write to standard output" in result.stderr
