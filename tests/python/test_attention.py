"""Affine attention patterns (plait.sparse.acsr) against their definitions
as masks, and plait.attention against a float64 dense masked-softmax
reference, on the CPU."""

import numpy as np
import pytest

import plait
from plait.sparse import acsr
from sparse_cases import masked_attention as reference


def brute(seq_len, kept):
    i = np.arange(seq_len)[:, None]
    j = np.arange(seq_len)[None, :]
    return np.broadcast_to(kept(i, j), (seq_len, seq_len))


CONSTRUCTORS = [
    ("sliding", lambda n: acsr.sliding(n, 3), lambda i, j: abs(i - j) <= 3),
    ("sliding_0", lambda n: acsr.sliding(n, 0), lambda i, j: i == j),
    ("causal_window", lambda n: acsr.causal_window(n, 4), lambda i, j: (i - j >= 0) & (i - j <= 4)),
    ("dilated", lambda n: acsr.dilated(n, 7, 3), lambda i, j: (abs(i - j) <= 7) & ((i - j) % 3 == 0)),
    ("dilated_wide", lambda n: acsr.dilated(n, 100, 4), lambda i, j: (i - j) % 4 == 0),
    ("strided", lambda n: acsr.strided(n, 5), lambda i, j: (i >= j) & ((i - j) % 5 == 0)),
    ("blocked", lambda n: acsr.blocked(n, 6), lambda i, j: i // 6 == j // 6),
    ("global_window", lambda n: acsr.global_window(n, 2, 3), lambda i, j: (abs(i - j) <= 2) | (i < 3) | (j < 3)),
]
SEQ_LENS = [0, 1, 2, 7, 31]


@pytest.mark.parametrize("name, make, kept", CONSTRUCTORS, ids=[c[0] for c in CONSTRUCTORS])
@pytest.mark.parametrize("seq_len", SEQ_LENS)
def test_constructors_keep_what_their_masks_keep(name, make, kept, seq_len):
    P = make(seq_len)
    want = brute(seq_len, kept)
    assert P.shape == (seq_len, seq_len)
    np.testing.assert_array_equal(P.mask(), want)
    assert P.nnz == int(want.sum())
    csr = P.tocsr()
    assert csr.has_canonical_format and np.all(csr.data == 1.0)
    # A pattern made from its mask is the same pattern.
    assert acsr.from_mask(want.copy()) == P


def test_from_mask_takes_mask_mods():
    def causal(q_idx, kv_idx):
        return q_idx >= kv_idx

    def sliding_flex(b, h, q_idx, kv_idx):  # FlexAttention's mask_mod
        return abs(q_idx - kv_idx) <= 2

    assert acsr.from_mask(causal, shape=9) == acsr.causal_window(9, 8)
    assert acsr.from_mask(sliding_flex, shape=(11, 11)) == acsr.sliding(11, 2)
    rect = acsr.from_mask(causal, shape=(3, 5))
    np.testing.assert_array_equal(rect.mask(), np.tril(np.ones((3, 5), bool)))
    with pytest.raises(TypeError, match="shape="):
        acsr.from_mask(causal)


def test_from_mask_refuses_rows_that_are_not_affine():
    mask = np.zeros((4, 12), bool)
    mask[1, [0, 1]] = True
    mask[2, [0, 1, 5, 6, 10]] = True  # three runs: 0-1, 5-6, 10
    mask[3, [0, 1, 2, 5, 8, 10]] = True
    with pytest.raises(ValueError, match=r"row 2 is not affine"):
        acsr.from_mask(mask)
    with pytest.raises(TypeError, match="2-D boolean"):
        acsr.from_mask(np.zeros((3, 3)))


def test_patterns_are_checked():
    with pytest.raises(ValueError, match="row 1's part"):
        acsr.Pattern((2, 4), [(np.array([0, 3]), np.array([1, 1]), np.array([2, 2]))])
    with pytest.raises(ValueError, match="keep column 2 twice"):
        acsr.Pattern((1, 4), [(np.array([0]), np.array([1]), np.array([3])),
                              (np.array([2]), np.array([1]), np.array([2]))])
    with pytest.raises(ValueError, match="must be at least 1"):
        acsr.dilated(8, 3, 0)


TOLERANCE = {np.float64: 1e-12, np.float32: 2e-5}


@pytest.mark.parametrize("name, make, kept", CONSTRUCTORS, ids=[c[0] for c in CONSTRUCTORS])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_attention_matches_masked_softmax(name, make, kept, dtype):
    rng = np.random.default_rng(len(name))
    for lead, seq_len, d in (((), 1, 4), ((2, 3), 31, 8), ((1,), 17, 5)):
        P = make(seq_len)
        q, k, v = (rng.standard_normal(lead + (seq_len, d)).astype(dtype) for _ in range(3))
        got = plait.attention(q, k, v, P)
        assert got.dtype == dtype and got.shape == lead + (seq_len, d)
        want = reference(q, k, v, P.mask(), 1.0 / np.sqrt(d))
        np.testing.assert_allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_attention_of_rows_without_keys_is_zero():
    rng = np.random.default_rng(3)
    mask = np.tril(np.ones((6, 9), bool), k=-1)  # row 0 keeps nothing
    P = acsr.from_mask(mask)
    q, k, v = rng.standard_normal((6, 4)), rng.standard_normal((9, 4)), rng.standard_normal((9, 2))
    got = plait.attention(q, k, v, P, scale=0.7)
    np.testing.assert_allclose(got, reference(q, k, v, mask, 0.7), rtol=1e-12, atol=1e-12)
    assert np.all(got[0] == 0.0)


def test_attention_refuses_what_it_cannot_take():
    P = acsr.sliding(5, 1)
    q = np.ones((5, 4))
    with pytest.raises(ValueError, match="pattern's shape"):
        plait.attention(q, q, q, acsr.sliding(6, 1))
    with pytest.raises(TypeError, match="all float32, float64, bfloat16 or float16"):
        plait.attention(q.astype(np.float16), q, q, P)
    with pytest.raises(TypeError, match="all float32, float64, bfloat16 or float16"):
        plait.attention(*(q.astype(np.int64),) * 3, P)
    with pytest.raises(ValueError, match="leading dimensions"):
        plait.attention(np.ones((2, 5, 4)), np.ones((3, 5, 4)), np.ones((3, 5, 4)), P)


def test_half_precision_runs_in_float32_on_the_cpu():
    # NumPy float16 and PyTorch CPU bfloat16/float16: computed in float32,
    # the result rounded to the inputs' type.
    rng = np.random.default_rng(8)
    P = acsr.dilated(37, 9, 2)
    host = [rng.standard_normal((2, 37, 16)).astype(np.float16) for _ in range(3)]
    got = plait.attention(*host, P)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, reference(*host, P.mask(), 0.25), rtol=2e-3, atol=2e-3)
    assert "the fused kernel runs on the GPU" in plait.attention.explain(*host, P)
    torch = pytest.importorskip("torch")
    t = [torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16) for x in host]
    got = plait.attention(*t, P)
    assert got.dtype == torch.bfloat16
    np.testing.assert_allclose(got.float().numpy(), reference(*(x.float().numpy() for x in t), P.mask(), 0.25),
                               rtol=2e-2, atol=2e-2)


def test_a_pattern_explains_its_affine_parts_and_tiles():
    text = acsr.dilated(4099, 512, 4).explain()
    assert "part 0: 4099 rows" in text and "stride 4" in text
    assert "4 groups of rows" in text and "computed scores kept" in text
    plan = acsr.dilated(4099, 512, 4).tiles()
    assert plan["kept"] == acsr.dilated(4099, 512, 4).nnz <= plan["computed"]
    assert sorted(plan["rows"].tolist()) == list(range(4099))
    text = acsr.global_window(300, 8, 3).explain()
    assert "part 1: 297 rows" in text and "2 groups of rows" in text


def test_a_pattern_is_a_sparse_matrix_of_ones_in_kernels():
    def scores(P, q, k):
        return plait.sparse.mask(P, q @ k.T).sum(axis=1) + (P @ q)[:, 0]

    rng = np.random.default_rng(5)
    P = acsr.global_window(13, 2, 1)
    q, k = rng.standard_normal((13, 3)), rng.standard_normal((13, 3))
    np.testing.assert_allclose(plait.jit(scores)(P, q, k), scores(P, q, k), rtol=1e-12)


def test_the_benchmarks_mask_mods_are_its_patterns():
    # python -m plait.bench attention gives FlexAttention the mask_mod of each
    # pattern: the two must keep the same scores.
    from plait.bench.attention import PATTERNS

    for name, (make, mask_mod) in PATTERNS.items():
        for seq_len in (1, 700):
            P = make(acsr, seq_len)
            np.testing.assert_array_equal(P.mask(), brute(seq_len, mask_mod), err_msg=name)


def test_patterns_are_cached_by_their_parameters():
    P = acsr.dilated(64, 8, 2)
    assert acsr.dilated(64, 8, 2) is P and acsr.dilated(64, 8, 4) is not P
    assert P.tocsr() is P.tocsr()
    with pytest.raises(ValueError, match="read-only"):
        P.parts[0][0][0] = 5
