"""The 20 NPBench kernels, written for Plait's benchmark suite.

Each module holds one kernel: PRESETS (NPBench's S, M, L and paper sizes, and
a tiny "test" size for the smoke test), PARAMETERS (the call's arguments in
order), OUTPUTS (the in/out arrays that are validated after the returned
values), initialize(preset), the NumPy version kernel_numpy (the oracle),
kernel_numba, kernel_plait, the GPU peers' kernel_cupy, kernel_jax,
kernel_torch and either kernel_torch_compile or NO_TORCH_COMPILE (why there
is none), CHECKSUMS of the NumPy outputs, and optionally
validation_inputs(preset) with extra inputs that catch implementations that
do nothing. `python -m plait.bench npbench` runs them.
"""

KERNELS = (
    "azimint_naive",
    "cholesky",
    "covariance",
    "fdtd_2d",
    "floyd_warshall",
    "gemm",
    "gemver",
    "gesummv",
    "go_fast",
    "gramschmidt",
    "heat_3d",
    "jacobi_1d",
    "jacobi_2d",
    "softmax",
    "spmv",
    "symm",
    "syr2k",
    "syrk",
    "trisolv",
    "trmm",
)
