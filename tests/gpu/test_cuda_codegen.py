"""The CUDA code generator on machines without a GPU (CI): for every kernel of
cuda_kernels.py and each of its signatures, plaitc emits the device part (CUDA C++)
and the host part (C++); the device part compiles with NVRTC for sm_90 without
warnings (and, for the first signature of a sample of the kernels, with nvcc
too: nvcc_sample), the host part with the system compiler with warnings as
errors."""

import inspect
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import cuda_kernels
import precompiled
from cuda_kernels import KERNELS

HERE = pathlib.Path(__file__).resolve().parent
KERNELS_FILE = HERE / "cuda_kernels.py"
# The plaitc installed beside this Python (make test sets PLAIT_PLAITC to it).
PLAITC = pathlib.Path(os.environ.get("PLAIT_PLAITC", pathlib.Path(sys.executable).with_name("plaitc")))


def find_nvcc():
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (pathlib.Path(root) / "bin" / "nvcc").exists():
            return str(pathlib.Path(root) / "bin" / "nvcc")
    return None


NVCC = find_nvcc()
CASES = [(name, signature) for name, signatures in KERNELS.items() for signature in signatures]

pytestmark = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")


def kernel_names(device_source):
    return re.findall(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(', device_source)


def plaitc(*args):
    env = dict(os.environ)
    env.pop("PLAIT_DUMP_DIR", None)
    return subprocess.run([str(PLAITC), *args], capture_output=True, text=True, env=env)


def emit_from(kernels_file, tmp_path, name, signature, what, *extra):
    """plaitc's CUDA output `what` (cu, cpp, ptx) for a kernel of `kernels_file`: the file's path.
    The other test modules with kernel files of their own use it too. Unchecked unless `extra`
    says --boundscheck: the tests of the planners' forms read the kernels a checked build runs
    once its tests before a nest pass, without the checked versions beside them."""
    if "--boundscheck" not in extra:
        extra = ("--no-boundscheck", *extra)
    result = plaitc("compile", f"{kernels_file}::{name}", "--signature", signature, "--target", "cuda",
                    "--emit", what, "-o", str(tmp_path), *extra)
    assert result.returncode == 0, result.stderr
    # PTX comes from NVRTC, whose warnings plaitc prints: there must be none.
    assert what != "ptx" or result.stderr == "", result.stderr
    suffix = {"cu": ".cu", "cpp": ".cpp", "ptx": ".ptx"}[what]
    return tmp_path / (name + suffix)


def emit(tmp_path, name, signature, what, *extra):
    return emit_from(KERNELS_FILE, tmp_path, name, signature, what, *extra)


def assert_nvcc_compiles(tmp_path, source):
    """nvcc compiles the device source for sm_90 with no output at all; returns the PTX."""
    result = subprocess.run([NVCC, "-arch=sm_90", "--ptx", "-Werror", "all-warnings", "-o",
                             str(tmp_path / "out.ptx"), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout + result.stderr == ""
    return (tmp_path / "out.ptx").read_text()


# The standard headers of every host part, precompiled for the compile tests.
HOST_HEADERS = ("stdint.h", "sys/mman.h", "cmath", "cstdint", "cstdio", "cstdlib", "cstring", "limits", "memory", "new",
                "type_traits")


def assert_host_compiles(tmp_path, source, *flags):
    """The system compiler builds the host part with warnings as errors (its
    standard headers precompiled: the part must include each of them itself,
    so that the precompiled header hides no missing include)."""
    text = source.read_text()
    missing = [h for h in HOST_HEADERS if f"#include <{h}>" not in text]
    assert not missing, f"the host part no longer includes {missing}: update HOST_HEADERS"
    options = ("-std=c++20", "-O1", *flags, "-fwrapv", "-Wall", "-Wextra", "-Werror", "-fPIC")
    headers = precompiled.header_dir("host_std.h", HOST_HEADERS, options)
    result = subprocess.run([precompiled.compiler(), *options, "-I", headers, "-include", "host_std.h", "-shared",
                             "-o", str(tmp_path / "host.so"), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


NVCC_EVERY = 4


def nvcc_sample(cases):
    """The first (name, signature) case of every NVCC_EVERY-th kernel, in
    table order: nvcc's share of the compile tests. NVRTC, which runs the
    same front end and is the compiler plait uses, checks every signature
    for warnings; nvcc, at five times NVRTC's cost per run, checks a sample
    of the kernels once more as a second compiler."""
    names = list(dict.fromkeys(name for name, _ in cases))
    sampled = set(names[::NVCC_EVERY])
    seen = set()
    return [case for case in cases if case[0] in sampled and not (case[0] in seen or seen.add(case[0]))]


@pytest.mark.skipif(NVCC is None, reason="nvcc not found (PATH, $CUDA_HOME, /usr/local/cuda)")
@pytest.mark.parametrize("name,signature", nvcc_sample(CASES))
def test_device_part_compiles_with_nvcc_for_sm90_without_warnings(tmp_path, name, signature):
    source = emit(tmp_path, name, signature, "cu")
    ptx = assert_nvcc_compiles(tmp_path, source)
    for kernel in kernel_names(source.read_text()):
        assert f".entry {kernel}(" in ptx


def nvrtc_available():
    probe = plaitc("compile", f"{KERNELS_FILE}::vector_add", "--signature", "f64[::1], f64[::1], f64[::1]",
                   "--emit", "ptx", "--arch", "90")
    return probe.returncode == 0, probe.stderr.strip()


NVRTC_OK, NVRTC_WHY = nvrtc_available() if PLAITC.exists() else (False, "plaitc not built")


def compile_tests(kernels_file, cases, boundscheck=True):
    """The compile tests of a module of test kernels (`cases`: (name,
    signature) pairs of `kernels_file`), for the module to bind to its own
    test_ names: the device part compiles with NVRTC without warnings (each
    kernel an entry of the PTX; unchecked, and also checked when asked), and with
    nvcc for sm_90 without warnings for a sample of the kernels (nvcc_sample),
    checked as by default; the host part with warnings as errors, checked."""
    compiles = pytest.mark.skipif(not PLAITC.exists(), reason=f"plaitc not built at {PLAITC}")

    @compiles
    @pytest.mark.skipif(NVCC is None, reason="nvcc not found (PATH, $CUDA_HOME, /usr/local/cuda)")
    @pytest.mark.parametrize("name,signature", nvcc_sample(cases))
    def nvcc(tmp_path, name, signature):
        assert_nvcc_compiles(tmp_path, emit_from(kernels_file, tmp_path, name, signature, "cu", "--boundscheck"))

    @compiles
    @pytest.mark.skipif(not NVRTC_OK, reason=f"NVRTC unavailable: {NVRTC_WHY}")
    @pytest.mark.parametrize("checked", [False, True] if boundscheck else [False])
    @pytest.mark.parametrize("name,signature", cases)
    def with_nvrtc(tmp_path, name, signature, checked):
        flags = ["--boundscheck"] if checked else []
        ptx = emit_from(kernels_file, tmp_path, name, signature, "ptx", "--arch", "90", *flags).read_text()
        for kernel in kernel_names(emit_from(kernels_file, tmp_path, name, signature, "cu", *flags).read_text()):
            assert f".entry {kernel}(" in ptx

    @compiles
    @pytest.mark.parametrize("name,signature", cases)
    def host(tmp_path, name, signature):
        assert_host_compiles(tmp_path, emit_from(kernels_file, tmp_path, name, signature, "cpp", "--boundscheck"))

    return nvcc, with_nvrtc, host


# Kernels under launch configurations other than the default (docs/cuda.md,
# "Launch configuration and autotuning"): team workers with rows and values
# in registers (softmax), a reduction, a batched one-thread worker, a serial
# loop run by one team of the block, and a persistent time loop.
LAUNCH_CASES = [
    (HERE / "row_group_kernels.py", "loop_softmax", "f32[:, ::1], f32[:, ::1]"),
    (KERNELS_FILE, "row_softmax", "f64[:, ::1], f64[:, ::1]"),
    (KERNELS_FILE, "dot", "f64[::1], f64[::1]"),
    (KERNELS_FILE, "vector_add", "f32[::1], f32[::1], f32[::1]"),
    (KERNELS_FILE, "stencil_steps", "f64[::1], f64[::1], int"),
    (KERNELS_FILE, "forward_substitution", "f64[:, ::1], f64[::1], f64[::1]"),
    (HERE / "device_loop_kernels.py", "cholesky", "f64[:, ::1]"),
]
LAUNCH_CONFIGS = [
    ["--cuda-threads", "512", "--cuda-row-groups", "2"],
    ["--cuda-threads", "1024", "--cuda-row-groups", "2"],
    ["--cuda-threads", "1024", "--cuda-row-groups", "8", "--cuda-max-team", "256"],
    ["--cuda-threads", "64", "--cuda-row-groups", "1"],
]


@pytest.mark.parametrize("config", LAUNCH_CONFIGS, ids=lambda c: "-".join(c[1::2]))
@pytest.mark.parametrize("kernels_file,name,signature", LAUNCH_CASES, ids=[c[1] for c in LAUNCH_CASES])
def test_launch_configurations_compile_without_warnings(tmp_path, kernels_file, name, signature, config):
    device = emit_from(kernels_file, tmp_path, name, signature, "cu", *config)
    threads = config[1]
    assert f"// launch configuration: threads {threads}, row groups {config[3]}," in device.read_text()
    assert "__launch_bounds__(256)" not in device.read_text()
    if NVRTC_OK:
        ptx = emit_from(kernels_file, tmp_path, name, signature, "ptx", "--arch", "90", *config).read_text()
        for kernel in kernel_names(device.read_text()):
            assert f".entry {kernel}(" in ptx
    assert_host_compiles(tmp_path, emit_from(kernels_file, tmp_path, name, signature, "cpp", *config), "-fopenmp")


@pytest.mark.skipif(not NVRTC_OK, reason=f"NVRTC unavailable: {NVRTC_WHY}")
@pytest.mark.parametrize("name,signature", CASES)
def test_device_part_compiles_with_nvrtc_for_sm90(tmp_path, name, signature):
    ptx = emit(tmp_path, name, signature, "ptx", "--arch", "90").read_text()
    assert ".target sm_90" in ptx
    for kernel in kernel_names(emit(tmp_path, name, signature, "cu").read_text()):
        assert f".entry {kernel}(" in ptx


@pytest.mark.parametrize("name,signature", CASES)
def test_host_part_compiles_with_warnings_as_errors(tmp_path, name, signature):
    source = emit(tmp_path, name, signature, "cpp")
    assert_host_compiles(tmp_path, source, "-fopenmp")
    text = source.read_text()
    assert "ctx->cuda->launch" in text


def test_reduction_uses_warp_shuffles_and_one_atomic_per_warp(tmp_path):
    device = emit(tmp_path, "dot", "f64[::1], f64[::1]", "cu").read_text()
    assert "plait::reduce_add(p_acc0, v_total);" in device
    assert "__shfl_down_sync" in device
    host = emit(tmp_path, "dot", "f64[::1], f64[::1]", "cpp").read_text()
    # The value before the loop goes to the accumulator; the result comes back.
    assert "copy_to_device(ctx, plait_cuda::scratch_slot(ctx, 0)" in host
    assert "copy_to_host(ctx" in host


def test_collapsed_nest_is_one_kernel_with_one_thread_per_iteration(tmp_path):
    device = emit(tmp_path, "matmul", "f64[:, ::1], f64[:, ::1], f64[:, ::1]", "cu").read_text()
    assert device.count("__global__") == 1
    assert "plait::split_digit(p_rest, " in device  # the collapsed index's digits, 32-bit where they fit
    assert "blockIdx.x * blockDim.x + threadIdx.x" in device


def test_matrix_product_calls_the_blas_entry_and_keeps_its_loops(tmp_path):
    host = emit(tmp_path, "gemm", "f64, f64, f64[:, ::1], f64[:, ::1], f64[:, ::1]", "cpp").read_text()
    call = re.search(r"const int32_t (p_gemm\d+) = ctx->cuda->gemm\(ctx, PLAIT_FLOAT64, (.*)\);", host)
    assert call, host
    # m, n, k, alpha, A (data, row and column strides), B, beta, C read, C.
    assert call.group(2) == ("a_C_n0, a_C_n1, a_A_n1, v_alpha, a_A_data, a_A_s0, 1, a_B_data, a_B_s0, 1, v_beta, 1, "
                             "a_C_data, a_C_s0, 1")
    status = call.group(1)
    fallback = host[host.index(f"if ({status} > 0) {{"):]
    assert "ctx->cuda->launch(" in fallback
    host = emit(tmp_path, "gemm_transposed_loops", "f64[:, :], f64[:, :], f64[:, :]", "cpp").read_text()
    assert "ctx->cuda->gemm(ctx, PLAIT_FLOAT64, a_C_n0, a_C_n1, a_A_n0, 1.0, a_A_data, a_A_s1, a_A_s0, " \
           "a_B_data, a_B_s1, a_B_s0, 0.0, 0, a_C_data, a_C_s0, a_C_s1);" in host


def test_products_of_integers_stay_loops(tmp_path):
    assert "cuda->gemm(" not in emit(tmp_path, "matmul_accumulate", "i64[:, ::1], i64[:, ::1], i64[:, ::1]",
                                     "cpp").read_text()


def test_a_product_divided_by_a_scalar_multiplies_by_its_reciprocal(tmp_path):
    host = emit(tmp_path, "matmul_divided", "f64[:, ::1], f64[:, ::1], f64[:, ::1]", "cpp").read_text()
    assert "(1.0 / 3.0)" in host[host.index("cuda->gemm("):]


def test_the_cpu_target_hands_matrix_products_to_its_blas():
    result = plaitc("compile", f"{KERNELS_FILE}::gemm", "--signature", "f64, f64, f64[:, ::1], f64[:, ::1], f64[:, ::1]",
                    "--emit", "ir")
    assert result.returncode == 0, result.stderr
    assert "matmul " in result.stdout


def test_one_thread_workers_load_their_first_elements_for_four_workers_at_once(tmp_path):
    device = emit(tmp_path, "histogram", "i64[::1], i64[::1]", "cu").read_text()
    # The values of four workers are in flight before the first bin update,
    # which then reads them from registers.
    loads = device.index("p_pre0[p_u] = a_values_data[")
    first_update = device.index("atomic_add", loads)
    assert device.index("for (int p_u = 0; p_u < 4; ++p_u) {", loads) < first_update
    assert "v_k = plait::mod<int64_t>(p_pre0[p_u], a_bins_n0);" in device[loads:first_update]
    # Straight-line workers run batched instead (all loads before the stores).
    assert "p_pre0" not in emit(tmp_path, "vector_add", "f64[::1], f64[::1], f64[::1]", "cu").read_text()


def test_statements_outside_parallel_loops_that_touch_arrays_run_in_one_device_thread(tmp_path):
    host = emit(tmp_path, "serial_prefix", "f64[::1], f64[::1]", "cpp").read_text()
    assert "ctx->cuda->launch(ctx, 0, 1, 1," in host


def test_allocation_inside_a_parallel_loop_takes_a_slice_of_one_buffer(tmp_path):
    device = emit(tmp_path, "row_counts", "i64[:, ::1], int, i64[::1]", "cu").read_text()
    assert "unsigned char* const p_mine = p_temps + ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * " \
           "p_temp_stride;" in device
    assert "a_h_data = reinterpret_cast<int64_t*>(p_mine + p_toff" in device
    host = emit(tmp_path, "row_counts", "i64[:, ::1], int, i64[::1]", "cpp").read_text()
    assert "plait_cuda::device_scratch p_temporaries;" in host
    assert "plait_cuda::grid_for_temporaries(" in host
    # A team shares its slice, and waits for all its threads before an
    # iteration reuses it.
    device = emit(tmp_path, "row_scaled_by_sum", "f64[:, ::1], f64[:, ::1]", "cu").read_text()
    assert "threadIdx.x) >> p_team_shift) * p_temp_stride;" in device
    assert re.search(r"p_k = plait::team_stopped\(p_err, p_team\) \? p_total : p_k \+ p_stride\) \{\n.*\n"
                     r"    plait::team_sync\(p_team\);  // the temporaries' slice", device)



def test_teams_reach_into_branches_and_loops_run_in_step(tmp_path):
    # syrk's serial k loop runs in every thread, its row slice spread over
    # the team, whose size the host takes at the first and last row.
    device = emit(tmp_path, "triangle_update", "float, float, f64[:, ::1], f64[:, ::1]", "cu").read_text()
    assert "int32_t p_team" in device
    assert re.search(r"for \(int64_t p_k\d+ = 0; p_k\d+ < p_trip\d+; \+\+p_k\d+\) \{\n.*v_k = ", device)
    host = emit(tmp_path, "triangle_update", "float, float, f64[:, ::1], f64[:, ::1]", "cpp").read_text()
    assert re.search(r"auto p_trips_at\d+ = \[&\]\(int64_t v_i\) -> int64_t", host)
    # A step reads what the previous step wrote in another thread: a barrier
    # at the top of the step, none between the worker's iterations otherwise.
    device = emit(tmp_path, "in_step_shift", "f64[:, ::1], f64[:, ::1], int", "cu").read_text()
    assert re.search(r"v_t = [^\n]*\n(\s*(#line|\[\[maybe_unused\]\])[^\n]*\n)*\s*plait::team_sync\(p_team\);  // `A` is "
                     r"written", device)
    # covariance's product inside the broadcast versions is a team too.
    device = emit(tmp_path, "upper_gram", "f64[:, ::1]", "cu").read_text()
    assert len(re.findall(r"p_lane; (p_k\d+ < p_trip|p_g\d+ < p_full)\d+; p_[kg]\d+ \+= p_team", device)) >= 4


def test_host_sizes_temporaries_once_or_per_iteration(tmp_path):
    # The mask's allocation sits on the broadcast branch: the host repeats the
    # flags' definitions and evaluates the branch once (no loop variable).
    host = emit(tmp_path, "masked_means", "f64[::1], f64[::1], int", "cpp").read_text()
    assert re.search(r"for \(int64_t (p_w\d+) = 0; \1 < 1; \+\+\1\)", host)
    assert re.search(r"\[\[maybe_unused\]\] const bool v__broadcast\d+ = \(a_radius_n0 != ", host)
    # The overlapping copy's temporary has M - i elements: every iteration.
    host = emit(tmp_path, "mirror", "f64[:, ::1]", "cpp").read_text()
    assert re.search(r"for \(int64_t (p_w\d+) = 0; \1 < p_total\d+; \+\+\1\)", host)


def refused(tmp_path, body, signature="f64[::1]"):
    source = tmp_path / "alloc.py"
    source.write_text("import numpy as np\n\n" + body)
    result = plaitc("compile", f"{source}::k", "--signature", signature, "--target", "cuda", "--emit", "cu")
    assert result.returncode == 1
    return result.stderr


def test_temporary_whose_shape_the_host_cannot_compute_is_a_compile_error(tmp_path):
    stderr = refused(tmp_path,
                     "def k(x):\n"
                     "    #pragma parallel for\n"
                     "    for i in range(x.shape[0]):\n"
                     "        t = np.zeros(int(x[i]))\n"
                     "        x[i] = np.sum(t) + t.shape[0]\n")
    assert "the shape of `t`, allocated inside a parallel loop, must be computable before the launch" in stderr
    assert "t = np.zeros(int(x[i]))" in stderr


def test_emit_so_is_refused_for_the_cuda_target(tmp_path):
    result = plaitc("compile", f"{KERNELS_FILE}::vector_add", "--signature", "f64[::1], f64[::1], f64[::1]",
                    "--target", "cuda", "-o", str(tmp_path))
    assert result.returncode == 64
    assert "--emit so is for the CPU target" in result.stderr


def without_warp_versions(device_source):
    """The device source without the team kernels' versions for teams of a
    warp (`<kernel>_warp`, the same text with the team a constant: docs/cuda.md,
    "Teams of a warp"), for tests that count what the kernels contain."""
    parts = re.split(r"(?=\n// parallel loop over )", device_source)
    return "".join(part for part in parts if not re.search(r"__global__ void __launch_bounds__\(\d+\) \w+_warp\(", part))


def kernels_by_name(device_source):
    """The kernels of a device source, by name: each kernel's text from its declaration to the next one."""
    parts = device_source.split('extern "C" __global__ void ')[1:]
    return {re.match(r"__launch_bounds__\([\d, ]+\) (\w+)\(", part).group(1): part for part in parts}


def test_softmax_array_form_spreads_the_row_maximum_and_keeps_rows_in_registers(tmp_path):
    device = kernels_by_name(emit(tmp_path, "softmax_last_axis", "f32[:, :, :, ::1]", "cu").read_text())[
        "plait_softmax_last_axis_k0"]
    # The row maximum: spread over the team, combined with NaN winning.
    assert re.search(r"plait::team_combine\(\w+, plait::op_maximum\(\)", device)
    # x is loaded once, into registers, by a loop of loads alone (groups of
    # 4 elements, docs/cuda.md "Vector accesses in teams"); `e` never goes
    # to memory in the registers' iterations, and the last loop reads it
    # from them. (Twice in the source: for a whole group and for the
    # partial one.)
    assert len(re.findall(r"p_row\d+\[p_c \* 4 \+ p_u\] = p_lanes\d+\.v\[p_u\];", device)) == 2
    assert re.search(r"p_row\d+\[p_c \* 4 \+ p_u\] = plait::fm::exp\(\(p_row\d+\[p_c \* 4 \+ p_u\] - v_m\)\);", device)
    assert re.search(r"\] = \(p_row\d+\[p_c \* 4 \+ p_u\] / v__tmp\d+\);", device)
    # The registers are registers: NVRTC's PTX has no local memory.
    ptx = emit(tmp_path, "softmax_last_axis", "f32[:, :, :, ::1]", "ptx", "--arch", "90").read_text()
    assert "__local_depot" not in ptx
    # Rows that fit in the registers need no buffer for `e`.
    host = emit(tmp_path, "softmax_last_axis", "f32[:, :, :, ::1]", "cpp").read_text()
    assert re.search(r"const bool (p_in_registers\d+) = plait::trip_count\(int64_t\(0\), a_x_n3, int64_t\(1\)\) <= "
                     r"int64_t\(16\) \* p_team\d+;", host)


def test_host_checks_the_ranges_it_counts(tmp_path):
    # A parallel loop's range and a serial loop's on the host: a zero step is
    # ValueError and more than 2**63 - 1 values OverflowError, at the loop's
    # line (plait::checked_trip_count, as on the CPU).
    host = emit(tmp_path, "doubled_stepped", "f64[::1], int, int, int, f64[::1]", "cpp").read_text()
    line = line_of("doubled_stepped", "for i in range(lo, hi, step)")
    assert re.search(rf"= plait::checked_trip_count\(ctx, {line}, \d+, p_begin\d+, p_end\d+, p_step\d+\);", host)
    host = emit(tmp_path, "offsets_by_steps", "f64[::1], int, f64[::1]", "cpp").read_text()
    line = line_of("offsets_by_steps", "for t in range(0, 5, step)")
    assert len(re.findall(rf"= plait::checked_trip_count\(ctx, {line}, \d+, ", host)) >= 1


def test_persistent_jacobi_1d_keeps_its_arrays_in_registers(tmp_path):
    # Each thread holds 12 elements of `a` and `b` and stores them at their
    # own slot; a[i - 1] at the first slot and a[i + 1] at the last come from
    # the neighbours' halo rows, once per loop behind one barrier; no grid
    # barrier. The host tries this version first, then the on-chip copies.
    source = emit(tmp_path, "jacobi_1d", "int, f64[::1], f64[::1]", "cu").read_text()
    kernel = source[source.index("plait_jacobi_1d_k0_registers("):]
    kernel = kernel[:kernel.index("\n}\n")]
    assert "double a_a_data_reg[12];" in kernel and "double a_b_data_reg[12];" in kernel
    assert "a_b_data_reg[5] = (0.33333 * ((a_a_data_reg[4] + a_a_data_reg[5]) + a_a_data_reg[6]));" in kernel
    assert re.search(r"a_b_data_reg\[0\] = \(0\.33333 \* \(\(\(a_a_data_halo \+ [^;]*threadIdx\.x\) \* 2\)\[1\] "
                     r"\+ a_a_data_reg\[0\]\) \+ a_a_data_reg\[1\]\)\);", kernel)
    assert kernel.count("__syncthreads();") == 2 and "grid_sync" not in kernel
    host = emit(tmp_path, "jacobi_1d", "int, f64[::1], f64[::1]", "cpp").read_text()
    assert re.search(r"const uint32_t p_registers_block\d+ = plait_cuda::register_block\(std::max<int64_t>\("
                     r"std::max<int64_t>\(int64_t\(0\), a_[ab]_n0\), a_[ab]_n0\), 12\);", host)
    assert host.index("launch_shared(ctx, 2,") < host.index("launch_shared(ctx, 1,")


def test_persistent_steps_keep_only_the_barriers_they_need(tmp_path):
    # fdtd_2d: the `ey` row 0 and the `ey` rows 1.. share no element, the `ex`
    # update no written array with them: two barriers a step, after the `ex`
    # update (the `hz` update reads both) and after the `hz` update (the next
    # step). The second loop of row_zero_read_steps reads row 0: three.
    def kernel_text(name, signature):
        source = emit(tmp_path, name, signature, "cu").read_text()
        kernel = source[source.index(f"plait_{name}_k0("):]
        return kernel[:kernel.index("\n}\n")]
    fdtd = kernel_text("fdtd_2d_loops", "int, f64[:, ::1], f64[:, ::1], f64[:, ::1], f64[::1]")
    barrier = "    if (plait::grid_sync(p_barrier, p_err)) return;"
    assert fdtd.count(barrier) == 2
    assert fdtd.count("if (!p_apart && plait::grid_sync(p_barrier, p_err)) return;") == 2  # one array passed twice
    assert fdtd.index(barrier) > fdtd.index("#line {}".format(line_of("fdtd_2d_loops", "for i2 in")))
    kept = kernel_text("row_zero_read_steps", "int, f64[:, ::1], f64[:, ::1], f64[::1]")
    assert kept.count("plait::grid_sync(p_barrier, p_err)) return;") == 3 + 1  # and the entry's


def line_of(kernel, fragment):
    """The line of cuda_kernels.py of `kernel`'s source line containing `fragment`."""
    lines, first = inspect.getsourcelines(getattr(cuda_kernels, kernel))
    return next(first + k for k, text in enumerate(lines) if fragment in text)


def test_softmax_loop_form_reads_x_once_into_registers(tmp_path):
    kernels = kernels_by_name(emit(tmp_path, "row_softmax", "f32[:, ::1], f32[:, ::1]", "cu").read_text())
    # The kernel and its wide version for rows longer than 4096 (docs/cuda.md,
    # "Wide blocks for long rows"): the same body, blocks of 512; each has a
    # version for rows that fit in the registers (test_rows_that_fit_...).
    assert sorted(kernels) == ["plait_row_softmax_k0", "plait_row_softmax_k0_fit", "plait_row_softmax_k0_wide",
                               "plait_row_softmax_k0_wide_fit"]
    device, wide = kernels["plait_row_softmax_k0"], kernels["plait_row_softmax_k0_wide"]
    assert device.startswith("__launch_bounds__(256)") and wide.startswith("__launch_bounds__(512)")
    assert len(re.findall(r"p_row\d+\[p_c \* 4 \+ p_u\] = p_lanes\d+\.v\[p_u\];", device)) == 2
    assert len(re.findall(r"p_row\d+\[p_c \* 4 \+ p_u\] = p_lanes\d+\.v\[p_u\];", wide)) == 2
    # The wide version runs only with a team of its whole block, so the team
    # is a constant of that kernel (team_combine and the lane arithmetic fold
    # it), and a parameter of the other.
    assert "constexpr int32_t p_team = 512;" in wide and "int32_t p_team_arg," in wide
    assert "constexpr int32_t p_team" not in device and "int32_t p_team," in device
    host = emit(tmp_path, "row_softmax", "f32[:, ::1], f32[:, ::1]", "cpp").read_text()
    assert re.search(r"const int32_t (p_wide_team\d+) = plait_cuda::team_for\(\w+, 512, 512\);\n"
                     r" *const bool p_wide\d+ = \1 == 512;", host)
    # exp(x - m) once per element in the registers' iterations: the last
    # loop reads the sum's values (docs/cuda.md, "Values kept in registers").
    # (Twice in the source: for a whole group and for the partial one.)
    assert len(re.findall(r"plait::fm::exp\(\(p_row\d+\[p_c \* 4 \+ p_u\] - v_m\)\)", device)) == 2
    # The builtin max(m, x) keeps its NaN rule with py_max: no flag, no rerun.
    assert "plait::op_max()(" in device and "nan_seen" not in device


def test_rows_that_fit_in_the_registers_have_versions_without_the_rest(tmp_path):
    # docs/cuda.md, "Rows that fit in the registers": the versions _fit and
    # _wide_fit keep the registers' whole groups only (no partial group, no
    # loop over the iterations beyond the registers), and the host runs them
    # when each row loop has at most 16 iterations per thread, a multiple of 4.
    kernels = kernels_by_name(emit(tmp_path, "row_softmax", "f32[:, ::1], f32[:, ::1]", "cu").read_text())
    for name in ("plait_row_softmax_k0", "plait_row_softmax_k0_wide"):
        full, fit = kernels[name], kernels[name + "_fit"]
        assert fit.split(" ", 1)[0] == full.split(" ", 1)[0]  # the same __launch_bounds__
        assert len(re.findall(r"for \(int64_t p_g\d+ = p_lane \+ \(int64_t\)4 \* p_team;", full)) == 3
        assert "p_g" not in fit and "p_tail" not in fit and "else if (p_c < p_mine" not in fit
        assert len(re.findall(r"if \(p_c < p_whole_mine\d+\) \{", fit)) == 4  # the loads, then each loop
    assert "constexpr int32_t p_team = 512;" in kernels["plait_row_softmax_k0_wide_fit"]
    host = emit(tmp_path, "row_softmax", "f32[:, ::1], f32[:, ::1]", "cpp").read_text()
    fits = re.findall(r"if \(plait::trip_count\(int64_t\(0\), a_x_n1, int64_t\(1\)\) <= int64_t\(16\) \* (p_team\d+) && "
                      r"plait::trip_count\(int64_t\(0\), a_x_n1, int64_t\(1\)\) % 4 == 0\) \{", host)
    assert len(fits) == 2 and len(set(fits)) == 1  # the wide kernel's test, then the other's
    # The array form: the temporaries `e` and the result's rows in registers too.
    kernels = kernels_by_name(emit(tmp_path, "softmax_last_axis", "f32[:, :, ::1]", "cu").read_text())
    assert sorted(kernels) == ["plait_softmax_last_axis_k0", "plait_softmax_last_axis_k0_fit"]
    # Rows whose bounds depend on the row (a triangle) have no such version.
    assert sorted(kernels_by_name(emit(tmp_path, "lower_row_shift", "f64[:, ::1], f64[:, ::1]", "cu").read_text())) \
        == ["plait_lower_row_shift_k0", "plait_lower_row_shift_k0_wide"]


def test_reversed_builtin_max_runs_again_in_order_after_a_nan(tmp_path):
    device = emit(tmp_path, "row_extremes_builtin_reversed", "f64[:, ::1], f64[::1], f64[::1]", "cu").read_text()
    assert re.search(r"if \(plait::team_combine\(p_nan_seen\d+, plait::op_or\(\), p_team, p_part_i32\) != 0\) \{\n"
                     r" *plait::team_sync\(p_team\);", device)
    assert "v_m = plait::py_max<double>(a_x_data[" in device  # the ordered rerun keeps max(x, m)
    # A row temporary that such a loop reads stays in memory.
    device = emit(tmp_path, "doubled_row_max_reversed", "f64[:, ::1], f64[::1]", "cu").read_text()
    assert re.search(r"p_lanes\d+\.v\[p_u\] = p_row\d+\[p_c \* 4 \+ p_u\];\n(.*\n){2}.*plait::store_lanes<double, 4>"
                     r"\(a_t_data \+ ", device)


def test_whole_array_maximum_combines_across_the_grid_with_nan_winning(tmp_path):
    device = emit(tmp_path, "array_extremes", "f64[:, ::1]", "cu").read_text()
    assert "plait::reduce_maximum(" in device and "plait::reduce_minimum(" in device
