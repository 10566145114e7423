"""Autotuning of CUDA kernels: plait.jit(target="cuda", tune={...}, autotune=True).

This module holds what needs no GPU: the candidate space (launch knobs and
integer constants the kernel reads as global names), the shape class of a
call, the key and text of the disk cache's record of a choice, and the part
of explain() that reports tuning runs. The tuning run itself (compile every
candidate, time it on copies of the arguments, keep the fastest) is
CudaDispatcher's (plait/cuda.py). docs/cuda.md, "Launch configuration and
autotuning", describes the whole.
"""

import dis
import hashlib
import itertools
import json
import types

# The launch knobs (CompileOptions::cuda_launch) and their allowed values.
KNOBS = {
    "threads": (64, 128, 256, 512, 1024),
    "row_groups": (1, 2, 4, 8),
    "max_team": (32, 64, 128, 256, 512, 1024),
}
# What a knob is when no candidate names it (the code generator's defaults;
# max_team 0: as many threads as the block).
KNOB_DEFAULTS = {"threads": 256, "row_groups": 4, "max_team": 0}
# autotune=True: every candidate is a compile, so the space stays small.
DEFAULT_SPACE = {"threads": (128, 256, 512), "row_groups": (2, 4)}
MAX_CANDIDATES = 64
RECORD_VERSION = "plait-tuning-v1"

_GLOBAL_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF")


def global_names_read(code):
    """The names a code object (and the code nested in it) reads as
    globals or free variables, not as attributes or locals."""
    names = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname in _GLOBAL_LOADS and isinstance(instruction.argval, str):
            names.add(instruction.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= global_names_read(const)
    return names


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class TuningSpace:
    """The candidates of a tuned kernel: for each tuned name (a knob or a
    constant), its values; the candidates are their cartesian product, in
    order, less those whose max_team exceeds their threads."""

    def __init__(self, values):
        self.values = dict(values)  # name -> tuple of values, in the order given

    @property
    def knobs(self):
        return [name for name in self.values if name in KNOBS]

    @property
    def constants(self):
        return [name for name in self.values if name not in KNOBS]

    def candidates(self):
        """Each candidate as a dict name -> value."""
        names = list(self.values)
        found = []
        for combination in itertools.product(*(self.values[name] for name in names)):
            candidate = dict(zip(names, combination))
            threads = candidate.get("threads", KNOB_DEFAULTS["threads"])
            if candidate.get("max_team", 0) > threads:
                continue
            found.append(candidate)
        return found

    def describe(self):
        """"threads in (128, 256, 512) x row_groups in (2, 4)"."""
        return " x ".join(f"{name} in ({', '.join(str(v) for v in values)})" for name, values in self.values.items())

    def to_json(self):
        return [[name, list(values)] for name, values in self.values.items()]


def tuning_space(fn, tune, autotune, target):
    """The TuningSpace of plait.jit(tune=..., autotune=...) for `fn`, or None
    when nothing is tuned. Raises ValueError naming what is wrong."""
    if tune is None and not autotune:
        return None
    if target != "cuda":
        raise ValueError("plait.jit: tune= and autotune= pick the fastest CUDA launch configuration by timing runs on "
                         "the GPU; they need target='cuda' (the CPU target has nothing to tune)")
    values = dict(DEFAULT_SPACE) if autotune else {}
    if tune is not None:
        if not isinstance(tune, dict):
            raise ValueError(f"plait.jit: tune must be a dict of name -> list of candidate values, got "
                             f"{type(tune).__name__}")
        read = global_names_read(fn.__code__)
        params = set(fn.__code__.co_varnames[:fn.__code__.co_argcount])
        knob_list = ", ".join(KNOBS)
        for name, candidates in tune.items():
            if not isinstance(name, str):
                raise ValueError(f"plait.jit: tune keys are names, got {name!r}")
            if not isinstance(candidates, (list, tuple, range)):
                raise ValueError(f"plait.jit: tune[{name!r}] must be a list of candidate values, got {candidates!r}")
            if len(candidates) == 0:
                raise ValueError(f"plait.jit: tune[{name!r}] has no candidate values")
            if name in KNOBS:
                allowed = KNOBS[name]
                for value in candidates:
                    if not _is_int(value) or value not in allowed:
                        raise ValueError(f"plait.jit: tune[{name!r}]: {value!r} is not an allowed value of the "
                                         f"launch knob {name!r}; allowed: {', '.join(str(v) for v in allowed)}")
            elif name in read and name not in params:
                for value in candidates:
                    if not _is_int(value):
                        raise ValueError(f"plait.jit: tune[{name!r}]: the constant {name!r} takes integer values, "
                                         f"not {value!r}")
            else:
                raise ValueError(f"plait.jit: tune key {name!r} is neither a launch knob ({knob_list}) nor a global "
                                 f"name that {fn.__qualname__} reads")
            values[name] = tuple(dict.fromkeys(candidates))
    space = TuningSpace(values)
    count = 1
    for candidates in values.values():
        count *= len(candidates)
    if count > MAX_CANDIDATES:
        raise ValueError(f"plait.jit: the tuning space {space.describe()} has {count} candidates; at most "
                         f"{MAX_CANDIDATES} are allowed (each one is a compile)")
    if not space.candidates():
        raise ValueError(f"plait.jit: no candidate of {space.describe()} has max_team <= threads")
    return space


def launch_options(candidate):
    """The launch knobs of a candidate as _core.compile's keyword arguments."""
    return {f"cuda_{name}": candidate.get(name, default) for name, default in KNOB_DEFAULTS.items()}


def candidate_constants(candidate):
    """The user-named constants of a candidate: name -> int."""
    return {name: value for name, value in candidate.items() if name not in KNOBS}


def candidate_text(candidate):
    """"threads=256 row_groups=4 BN=128"."""
    return " ".join(f"{name}={value}" for name, value in candidate.items())


def _power_of_two_at_least(n):
    return 1 << (n - 1).bit_length() if n > 1 else n


def shape_class(signature, shapes):
    """The class of calls that share a tuning choice: the argument types
    (dtypes and layouts, the signature text) plus, for every array argument
    in order, each extent rounded up to a power of two (0 and 1 stay)."""
    extents = ["x".join(str(_power_of_two_at_least(int(n))) for n in shape) for shape in shapes]
    return f"{signature} | {', '.join(extents)}" if extents else signature


def record_key(parts):
    """The disk cache key (64 hex digits) of a choice, from everything that
    decides which candidate is fastest except the tuned values themselves."""
    text = json.dumps([RECORD_VERSION] + list(parts), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def record_text(choice, results):
    """The text of a record: the choice and each candidate's time."""
    return json.dumps({"choice": choice,
                       "results": [{"candidate": c, "ms": ms, "note": note} for c, ms, note in results]})


def parse_record(text, space):
    """(choice, results) of a record's text, or None when it is not a
    record of `space` (its choice must be one of the candidates)."""
    try:
        data = json.loads(text)
        choice = data["choice"]
        results = [(r["candidate"], r["ms"], r["note"]) for r in data["results"]]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(choice, dict) or choice not in space.candidates():
        return None
    return choice, results


class TuningReport:
    """What explain() says about one shape class: each candidate's median
    time in ms (None: skipped, with why in the note), the choice and where
    it came from ("tuned now", "from the disk cache")."""

    def __init__(self, results, choice, origin):
        self.results = results  # [(candidate, ms or None, note)]
        self.choice = choice    # candidate, or None when no candidate ran
        self.origin = origin

    def lines(self):
        out = []
        for candidate, ms, note in self.results:
            timing = f"{ms:.4f} ms" if ms is not None else "skipped"
            out.append(f"    {candidate_text(candidate)}: {timing}{' (' + note + ')' if note else ''}")
        if self.choice is None:
            out.append("    no candidate ran: nothing recorded, the next call tunes again")
        else:
            out.append(f"    choice: {candidate_text(self.choice)} ({self.origin})")
        return out


def explain_text(space, reports):
    """The tuning part of explain(): the space, then each shape class seen."""
    lines = [f"autotuning: {len(space.candidates())} candidates, {space.describe()}; a shape class is the "
             "argument types plus each array extent rounded up to a power of two"]
    if not reports:
        lines.append("  no call yet: the first call of each shape class times every candidate")
    for shape, report in reports.items():
        lines.append(f"  shape class {shape}:")
        lines.extend(report.lines())
    return "\n".join(lines) + "\n"
