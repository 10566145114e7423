"""plait.jit(tune=..., autotune=True) without a GPU (docs/cuda.md, "Launch
configuration and autotuning"): argument validation, the candidate space,
the shape class, the names a kernel reads, and the disk cache's records of
choices (round trip, a damaged record ignored and removed). The tuning runs
themselves are in tests/gpu/test_cuda_tuning.py."""

import os
import stat

import numpy as np
import pytest

import plait
from plait import _core, tuning

BN = 64


def strips(x, out):
    #pragma parallel for
    for i in range(x.shape[0]):
        s = 0.0
        for j0 in range(0, x.shape[1], BN):
            for j in range(j0, min(j0 + BN, x.shape[1])):
                s += np.abs(x[i, j])
        out[i] = s


def jit_cuda(**options):
    return plait.jit(target="cuda", **options)(strips)


def test_no_tuning_without_tune_or_autotune():
    assert tuning.tuning_space(strips, None, False, "cuda") is None


def test_the_cpu_target_refuses_tune_and_autotune():
    with pytest.raises(ValueError, match="need target='cuda'"):
        plait.jit(autotune=True)(strips)
    with pytest.raises(ValueError, match="need target='cuda'"):
        plait.jit(strips, tune={"BN": [32, 64]})


@pytest.mark.parametrize("tune,message", [
    ({"threads": [128, 300]}, r"tune\['threads'\]: 300 is not an allowed value of the launch knob 'threads'; "
                              r"allowed: 64, 128, 256, 512, 1024"),
    ({"threads": [True]}, r"True is not an allowed value of the launch knob 'threads'"),
    ({"row_groups": [3]}, r"3 is not an allowed value of the launch knob 'row_groups'; allowed: 1, 2, 4, 8"),
    ({"max_team": [16]}, r"launch knob 'max_team'; allowed: 32, 64, 128, 256, 512, 1024"),
    ({"BN": [32, 2.5]}, r"the constant 'BN' takes integer values, not 2.5"),
    ({"BN": []}, r"tune\['BN'\] has no candidate values"),
    ({"BN": 32}, r"tune\['BN'\] must be a list of candidate values"),
    ({"blocks": [1, 2]}, r"tune key 'blocks' is neither a launch knob \(threads, row_groups, max_team\) nor a "
                         r"global name that strips reads"),
    ({"x": [1, 2]}, r"tune key 'x' is neither"),           # a parameter
    ({"shape": [1, 2]}, r"tune key 'shape' is neither"),   # an attribute, not a global name
    ({"s": [1, 2]}, r"tune key 's' is neither"),           # a local variable
    ({"threads": [64, 128, 256, 512, 1024], "row_groups": [1, 2, 4, 8], "BN": [8, 16, 32, 64]},
     r"has 80 candidates; at most 64"),
    ({"threads": [64], "max_team": [128]}, r"no candidate .* has max_team <= threads"),
])
def test_bad_tune_arguments_name_the_knob(tune, message):
    with pytest.raises(ValueError, match=message):
        jit_cuda(tune=tune)


def test_tune_must_be_a_dict():
    with pytest.raises(ValueError, match="tune must be a dict"):
        jit_cuda(tune=[("threads", [128])])


def test_the_default_space():
    space = tuning.tuning_space(strips, None, True, "cuda")
    assert space.candidates() == [{"threads": t, "row_groups": g} for t in (128, 256, 512) for g in (2, 4)]
    assert space.describe() == "threads in (128, 256, 512) x row_groups in (2, 4)"
    assert space.constants == [] and space.knobs == ["threads", "row_groups"]


def test_tune_with_autotune_replaces_the_named_knobs_and_adds_constants():
    space = tuning.tuning_space(strips, {"threads": [1024, 64, 1024], "BN": [16, 32]}, True, "cuda")
    assert space.values == {"threads": (1024, 64), "row_groups": (2, 4), "BN": (16, 32)}
    assert len(space.candidates()) == 8
    assert space.constants == ["BN"]


def test_candidates_whose_team_exceeds_the_block_are_left_out():
    space = tuning.tuning_space(strips, {"threads": [64, 256], "max_team": [64, 128]}, False, "cuda")
    assert space.candidates() == [{"threads": 64, "max_team": 64}, {"threads": 256, "max_team": 64},
                                  {"threads": 256, "max_team": 128}]
    # Without a threads knob the block has the default 256 threads.
    space = tuning.tuning_space(strips, {"max_team": [256, 512]}, False, "cuda")
    assert space.candidates() == [{"max_team": 256}]


def test_a_candidate_becomes_compile_options_and_constants():
    candidate = {"threads": 512, "BN": 128}
    assert tuning.launch_options(candidate) == {"cuda_threads": 512, "cuda_row_groups": 4, "cuda_max_team": 0}
    assert tuning.candidate_constants(candidate) == {"BN": 128}
    assert tuning.candidate_text(candidate) == "threads=512 BN=128"


def test_the_names_a_kernel_reads():
    names = tuning.global_names_read(strips.__code__)
    assert {"BN", "np", "range", "min"} <= names
    assert not names & {"x", "out", "s", "shape", "abs", "j0"}


@pytest.mark.parametrize("shapes,expected", [
    ([], "int"),
    ([(1000,)], "int | 1024"),
    ([(0, 1), (2, 3), (1024, 1025)], "int | 0x1, 2x4, 1024x2048"),
    ([(8192, 8192), (5,)], "int | 8192x8192, 8"),
])
def test_the_shape_class_rounds_extents_up_to_powers_of_two(shapes, expected):
    assert tuning.shape_class("int", shapes) == expected


def test_shape_classes_group_nearby_sizes():
    sig = "f32[:, ::1], f32[:, ::1]"
    assert tuning.shape_class(sig, [(100, 100)] * 2) == tuning.shape_class(sig, [(128, 65)] * 2)
    assert tuning.shape_class(sig, [(100, 100)] * 2) != tuning.shape_class(sig, [(100, 129)] * 2)
    assert tuning.shape_class(sig, [(4, 4)] * 2) != tuning.shape_class("f64[:, ::1], f64[:, ::1]", [(4, 4)] * 2)


def test_record_keys_depend_on_every_part():
    key = tuning.record_key(["v", "source", "f32[::1]", "f32[::1] | 1024"])
    assert len(key) == 64 and int(key, 16) >= 0
    assert key == tuning.record_key(["v", "source", "f32[::1]", "f32[::1] | 1024"])
    assert key != tuning.record_key(["v", "source", "f32[::1]", "f32[::1] | 2048"])
    assert key != tuning.record_key(["v", "source2", "f32[::1]", "f32[::1] | 1024"])


def test_record_text_round_trip_and_foreign_choices():
    space = tuning.tuning_space(strips, {"threads": [128, 256], "BN": [32, 64]}, False, "cuda")
    results = [({"threads": 128, "BN": 32}, 0.25, ""), ({"threads": 256, "BN": 32}, None, "failed to run: X")]
    text = tuning.record_text({"threads": 128, "BN": 32}, results)
    assert tuning.parse_record(text, space) == ({"threads": 128, "BN": 32}, results)
    # A choice outside the space (another space's record) or a malformed text: no choice.
    other = tuning.tuning_space(strips, {"threads": [512]}, False, "cuda")
    assert tuning.parse_record(text, other) is None
    assert tuning.parse_record("not json", space) is None
    assert tuning.parse_record('{"choice": 3, "results": []}', space) is None


def test_explain_text_lists_candidates_and_the_choice():
    space = tuning.tuning_space(strips, {"threads": [128, 256]}, False, "cuda")
    report = tuning.TuningReport([({"threads": 128}, 0.5, ""), ({"threads": 256}, None, "does not compile: E: x")],
                                 {"threads": 128}, "tuned now")
    text = tuning.explain_text(space, {"f64 | 8": report})
    assert "autotuning: 2 candidates, threads in (128, 256)" in text
    assert "  shape class f64 | 8:\n    threads=128: 0.5000 ms\n    threads=256: skipped (does not compile: E: x)\n" \
           "    choice: threads=128 (tuned now)\n" in text
    assert "no call yet" in tuning.explain_text(space, {})


KEY = "ab" * 32


def test_disk_records_round_trip(tmp_path):
    cache = tmp_path / "cache"
    assert _core.lookup_record(KEY, str(cache)) is None
    _core.store_record(KEY, "first \u00e9 text", str(cache))
    assert _core.lookup_record(KEY, str(cache)) == "first \u00e9 text"
    _core.store_record(KEY, "second", str(cache))
    assert _core.lookup_record(KEY, str(cache)) == "second"
    record = cache / "records" / KEY
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(cache / "records").st_mode) == 0o700
    assert record.read_bytes().startswith(b"plait-record-v1\n")
    assert os.listdir(cache / "records") == [KEY]  # no staging file left behind


@pytest.mark.parametrize("damage", ["text", "checksum", "header", "truncated", "empty"])
def test_a_damaged_record_is_ignored_and_removed(tmp_path, damage):
    cache = tmp_path / "cache"
    _core.store_record(KEY, '{"choice": {"threads": 256}}', str(cache))
    record = cache / "records" / KEY
    data = record.read_bytes()
    if damage == "text":
        data = data.replace(b"256", b"512")
    elif damage == "checksum":
        at = len(b"plait-record-v1\n")
        data = data[:at] + (b"0" if data[at:at + 1] != b"0" else b"1") + data[at + 1:]
    elif damage == "header":
        data = data.replace(b"plait-record-v1", b"plait-record-v0")
    elif damage == "truncated":
        data = data[:40]
    else:
        data = b""
    record.write_bytes(data)
    assert _core.lookup_record(KEY, str(cache)) is None
    assert not record.exists()


def test_record_keys_must_be_hex_digests(tmp_path):
    with pytest.raises(plait.InternalCompilerError, match="64 lowercase hex digits"):
        _core.store_record("../escape", "x", str(tmp_path))
    with pytest.raises(plait.InternalCompilerError, match="64 lowercase hex digits"):
        _core.lookup_record("AB" * 32, str(tmp_path))


def test_records_refuse_a_shared_cache_directory(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(plait.InternalCompilerError, match="writable by group or others"):
        _core.store_record(KEY, "x", str(shared))


def test_compile_refuses_bad_launch_knobs():
    with pytest.raises(ValueError, match="threads \\(per block\\) must be 64, 128, 256, 512 or 1024, not 96"):
        _core.compile(path="k.py", text="def f(a):\n    pass\n", first_line=1, name="f", signature="f64[::1]",
                      modules={}, constants={}, boundscheck=False, fastmath=False, disk_cache=False, cache_dir="",
                      dump_dir="", cxx="", cuda_threads=96)
    with pytest.raises(ValueError, match="max_team must be a power of two from 32 to threads \\(128\\), not 256"):
        _core.compile(path="k.py", text="def f(a):\n    pass\n", first_line=1, name="f", signature="f64[::1]",
                      modules={}, constants={}, boundscheck=False, fastmath=False, disk_cache=False, cache_dir="",
                      dump_dir="", cxx="", cuda_threads=128, cuda_max_team=256)


def test_an_untuned_cpu_kernel_still_reads_the_global():
    x = np.arange(12.0).reshape(2, 6) - 5
    out = np.empty(2)
    plait.jit(strips, cache=False)(x, out)
    np.testing.assert_array_equal(out, np.abs(x).sum(axis=1))
