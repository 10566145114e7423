"""Per-kernel GPU times of Plait's NPBench kernels (torch.profiler/CUPTI)."""
import sys, importlib, numpy as np, torch
sys.path.insert(0, ".")
import plait
from torch.profiler import profile, ProfilerActivity
names = sys.argv[1:]
for name in names:
    m = importlib.import_module(f"benchmarks.npbench.{name}")
    inputs = m.initialize("S")
    fn = plait.jit(m.kernel_plait.py_func, target="cuda")
    def args():
        return [torch.from_numpy(np.ascontiguousarray(inputs[p])).cuda() if isinstance(inputs[p], np.ndarray) else inputs[p] for p in m.PARAMETERS]
    fn(*args()); torch.cuda.synchronize()
    a = args(); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        fn(*a); torch.cuda.synchronize()
    print(f"===== {name}")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=50))
