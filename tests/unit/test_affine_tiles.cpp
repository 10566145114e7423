// The tiles of affine sparse patterns (tensor/affine_tiles.h) and the fused
// attention kernel that runs over them (jit/cuda_sparse_attention.h): each
// tile gathers exactly the columns its rows keep, up to its edges, and the
// kernel's source compiles for Hopper.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/cuda_driver.h"
#include "jit/cuda_runtime.h"
#include "jit/cuda_sparse_attention.h"
#include "tensor/affine_tiles.h"

using namespace plait;

namespace {

struct Parts {
  std::vector<int64_t> first, stride, count;
};

// The dilated window of affine_tiles.h: |i - j| <= window, (i - j) % dilation == 0.
Parts dilated(int64_t n, int64_t window, int64_t dilation) {
  Parts p;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t back = std::min(i, window) / dilation * dilation;
    const int64_t ahead = std::min(n - 1 - i, window) / dilation * dilation;
    p.first.push_back(i - back);
    p.stride.push_back(dilation);
    p.count.push_back((back + ahead) / dilation + 1);
  }
  return p;
}

std::vector<tensor::AffinePart> views(const std::vector<Parts>& parts) {
  std::vector<tensor::AffinePart> v;
  for (const Parts& p : parts) v.push_back({p.first.data(), p.stride.data(), p.count.data()});
  return v;
}

// Each row's kept columns are on its tile's progression, inside its range.
void expect_tiles_cover(const tensor::AffineTiles& plan, const std::vector<Parts>& parts, int64_t rows) {
  std::set<int32_t> seen;
  for (size_t t = 0; t < plan.tile_count(); ++t) {
    const int32_t* f = &plan.tiles[t * tensor::kTileFields];
    ASSERT_LE(f[runtime::kRowCount], plan.tile_rows);
    if (f[runtime::kSplitGroup] >= 0 && f[runtime::kSplit] > 0) continue;  // the rows of a split tile once
    for (int32_t r = f[runtime::kRowBegin]; r < f[runtime::kRowBegin] + f[runtime::kRowCount]; ++r) {
      const int32_t i = plan.rows[static_cast<size_t>(r)];
      EXPECT_TRUE(seen.insert(i).second) << "row " << i << " is in two tiles";
      for (size_t p = 0; p < parts.size(); ++p) {
        const int64_t count = parts[p].count[static_cast<size_t>(i)];
        if (count == 0) continue;
        const int64_t lo = f[runtime::kPartLo + 3 * p], stride = f[runtime::kPartStride + 3 * p];
        const int64_t columns = f[runtime::kPartColumns + 3 * p];
        const int64_t first = parts[p].first[static_cast<size_t>(i)];
        ASSERT_EQ(stride, parts[p].stride[static_cast<size_t>(i)]) << "row " << i;
        ASSERT_EQ((first - lo) % stride, 0) << "row " << i << " is off its tile's progression";
        EXPECT_GE(first, lo);
        EXPECT_LE((first - lo) / stride + count, columns) << "row " << i;
      }
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), rows);
}

}  // namespace

TEST(AffineTiles, DilatedRowsGroupByResidueAndComputeLittleMoreThanTheyKeep) {
  const int64_t n = 4099;
  const std::vector<Parts> parts = {dilated(n, 512, 4)};
  const tensor::AffineTiles plan = tensor::plan_affine_tiles(n, n, views(parts), 64, 64);
  expect_tiles_cover(plan, parts, n);
  EXPECT_EQ(plan.groups, 4);  // one per residue of the dilation
  // A dense band would compute about 4x the kept scores; the tiles compute
  // the kept ones plus their edges (a tile's 64 rows shift its range by 63).
  EXPECT_GT(plan.kept * 10, plan.computed * 7);
  EXPECT_LE(plan.kept, plan.computed);
  // The tiles that gather the most keys come first.
  for (size_t t = 1; t < plan.tile_count(); ++t) {
    auto keys = [&](size_t at) { return (plan.tiles[at * tensor::kTileFields + runtime::kPartColumns] + 63) / 64; };
    EXPECT_GE(keys(t - 1), keys(t));
  }
}

TEST(AffineTiles, GlobalRowsTakeTilesOfTheirOwn) {
  // Two parts: rows below `globals` keep every column in part 0; the others
  // keep the global columns (part 0) and a window past them (part 1).
  const int64_t n = 300, globals = 5, window = 16;
  Parts head, band;
  for (int64_t i = 0; i < n; ++i) {
    const bool global = i < globals;
    head.first.push_back(0);
    head.stride.push_back(1);
    head.count.push_back(global ? n : globals);
    const int64_t lo = std::max(i - window, globals), hi = global ? -1 : std::min(i + window, n - 1);
    band.first.push_back(hi >= lo ? lo : 0);
    band.stride.push_back(1);
    band.count.push_back(hi >= lo ? hi - lo + 1 : 0);
  }
  const std::vector<Parts> parts = {head, band};
  const tensor::AffineTiles plan = tensor::plan_affine_tiles(n, n, views(parts), 64, 64);
  expect_tiles_cover(plan, parts, n);
  EXPECT_EQ(plan.groups, 2);
  // The global rows' tile gathers all n keys and runs first.
  EXPECT_EQ(plan.tiles[runtime::kRowCount], globals);
  EXPECT_EQ(plan.tiles[runtime::kPartColumns], n);
  EXPECT_EQ(plan.tiles[runtime::kPartColumns + 3], 0);
  EXPECT_EQ(plan.split_groups, 0);
  EXPECT_NE(tensor::describe(plan).find("2 groups of rows"), std::string::npos);
}

TEST(AffineTiles, ATileOfFarMoreKeysThanTheOthersIsSplitIntoRangesOfThem) {
  // 3000 keys: the global rows' tile has 47 key tiles, the others 1 and 1 or 2.
  const int64_t n = 3000, globals = 5;
  Parts head, band;
  for (int64_t i = 0; i < n; ++i) {
    head.first.push_back(0);
    head.stride.push_back(1);
    head.count.push_back(i < globals ? n : globals);
    band.first.push_back(i < globals ? 0 : std::max(i - 16, globals));
    band.stride.push_back(1);
    band.count.push_back(i < globals ? 0 : std::min(i + 16, n - 1) - std::max(i - 16, globals) + 1);
  }
  const std::vector<Parts> parts = {head, band};
  const tensor::AffineTiles plan = tensor::plan_affine_tiles(n, n, views(parts), 64, 64);
  expect_tiles_cover(plan, parts, n);
  EXPECT_EQ(plan.split_steps, 8);
  EXPECT_EQ(plan.split_groups, 1);
  EXPECT_EQ(plan.slots, 6);  // 47 key tiles in 6 ranges of at most 8
  std::vector<std::pair<int32_t, int32_t>> ranges;
  for (size_t t = 0; t < plan.tile_count(); ++t) {
    const int32_t* f = &plan.tiles[t * tensor::kTileFields];
    if (f[runtime::kSplitGroup] < 0) {
      EXPECT_EQ(f[runtime::kStepBegin], 0);
      continue;
    }
    EXPECT_EQ(f[runtime::kSplits], 6);
    EXPECT_EQ(f[runtime::kSlot], 0);
    EXPECT_EQ(f[runtime::kRowCount], globals);
    ranges.emplace_back(f[runtime::kStepBegin], f[runtime::kStepEnd]);
  }
  std::sort(ranges.begin(), ranges.end());
  ASSERT_EQ(ranges.size(), 6u);
  EXPECT_EQ(ranges.front().first, 0);
  EXPECT_EQ(ranges.back().second, 47);
  for (size_t r = 1; r < ranges.size(); ++r) EXPECT_EQ(ranges[r].first, ranges[r - 1].second);
  EXPECT_NE(tensor::describe(plan).find("1 long tile split into 6 ranges"), std::string::npos);
}

TEST(AffineTiles, EmptyRowsAndPartsOutsideTheColumnsAreChecked) {
  Parts none{{0, 0, 0}, {1, 1, 1}, {0, 0, 0}};
  const tensor::AffineTiles plan = tensor::plan_affine_tiles(3, 0, views({none}), 64, 64);
  ASSERT_EQ(plan.tile_count(), 1u);
  EXPECT_EQ(plan.tiles[runtime::kPartColumns], 0);  // no columns: the kernel writes the rows' zeros
  EXPECT_EQ(plan.kept, 0);
  Parts outside{{0, 7}, {1, 1}, {1, 2}};
  EXPECT_THROW(tensor::plan_affine_tiles(2, 8, views({outside}), 64, 64), std::invalid_argument);
}

TEST(SparseAttentionKernel, CompilesForHopperForEachTypeAndHeadDimension) {
  std::string why;
  if (!jit::cuda::nvrtc(&why)) GTEST_SKIP() << why;
  for (jit::HalfType type : {jit::HalfType::BFloat16, jit::HalfType::Float16})
    for (int d : {16, 48, 64, 128}) {
      CompileOptions options;
      options.fastmath = true;
      const jit::DeviceBuild build =
          jit::compile_device_code(jit::sparse_attention_source(type, d), 90, false, options);
      EXPECT_NE(build.ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos) << d;
      EXPECT_NE(build.ptx.find("ldmatrix.sync.aligned.m8n8.x4.trans"), std::string::npos) << d;
      EXPECT_FALSE(build.cubin.empty());
    }
  EXPECT_TRUE(jit::sparse_attention_head_dim_supported(64));
  EXPECT_FALSE(jit::sparse_attention_head_dim_supported(72));
}
