// Tiles of an affine sparse pattern (affine_tiles.h).
#include "tensor/affine_tiles.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace plait::tensor {

using namespace runtime;

namespace {

// What rows must share to share a tile: per part, its stride and the
// residue of its first column (0, 0 where the row has no such columns).
using GroupKey = std::array<int64_t, 2 * kAffineParts>;

int32_t narrow(int64_t v) {
  if (v < 0 || v > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("the pattern is too large for the attention kernel's 32-bit tiles");
  return static_cast<int32_t>(v);
}

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

AffineTiles plan_affine_tiles(int64_t rows, int64_t columns, const std::vector<AffinePart>& parts, int tile_rows,
                              int key_tile) {
  if (parts.empty() || parts.size() > kAffineParts) throw std::invalid_argument("a pattern has one or two parts");
  if (tile_rows < 1 || key_tile < 1) throw std::invalid_argument("tiles have at least one row and one key");
  AffineTiles plan;
  plan.tile_rows = tile_rows;
  plan.key_tile = key_tile;
  narrow(rows);
  narrow(columns);
  std::vector<GroupKey> key(static_cast<size_t>(rows));
  plan.row_parts.assign(static_cast<size_t>(rows) * 2 * kAffineParts, 0);
  for (int64_t i = 0; i < rows; ++i) {
    GroupKey& k = key[static_cast<size_t>(i)];
    k.fill(0);
    for (size_t p = 0; p < parts.size(); ++p) {
      const int64_t count = parts[p].count[i];
      if (count <= 0) continue;
      const int64_t first = parts[p].first[i], stride = parts[p].stride[i];
      if (stride < 1 || first < 0 || first + stride * (count - 1) >= columns)
        throw std::invalid_argument("row " + std::to_string(i) + "'s part " + std::to_string(p) + " leaves the " +
                                    std::to_string(columns) + " columns");
      k[2 * p] = stride;
      k[2 * p + 1] = first % stride;
      plan.row_parts[static_cast<size_t>(i) * 2 * kAffineParts + 2 * p] = narrow(first);
      plan.row_parts[static_cast<size_t>(i) * 2 * kAffineParts + 2 * p + 1] = narrow(count);
      plan.kept += count;
    }
  }
  auto first_of = [&](int64_t i, size_t p) {
    return p < parts.size() && parts[p].count[i] > 0 ? parts[p].first[i] : int64_t{-1};
  };
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), int64_t{0});
  // Within a group, rows in order of their first columns: neighbours in a
  // tile then keep overlapping ranges of keys.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const GroupKey &ka = key[static_cast<size_t>(a)], &kb = key[static_cast<size_t>(b)];
    if (ka != kb) return ka < kb;
    for (size_t p = 0; p < kAffineParts; ++p)
      if (first_of(a, p) != first_of(b, p)) return first_of(a, p) < first_of(b, p);
    return false;
  });

  struct Tile {
    std::array<int32_t, kTileFields> fields;
    int64_t key_tiles;
  };
  std::vector<Tile> tiles;
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin + 1;
    while (end < order.size() && end - begin < static_cast<size_t>(tile_rows) &&
           key[static_cast<size_t>(order[end])] == key[static_cast<size_t>(order[begin])])
      ++end;
    if (begin == 0 || key[static_cast<size_t>(order[begin])] != key[static_cast<size_t>(order[begin - 1])])
      ++plan.groups;
    Tile tile{};
    tile.fields[kRowBegin] = narrow(static_cast<int64_t>(begin));
    tile.fields[kRowCount] = narrow(static_cast<int64_t>(end - begin));
    int64_t gathered = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = -1, stride = 1;
      for (size_t r = begin; r < end; ++r) {
        const int64_t i = order[r], count = parts[p].count[i];
        if (count <= 0) continue;
        stride = parts[p].stride[i];
        lo = std::min(lo, parts[p].first[i]);
        hi = std::max(hi, parts[p].first[i] + stride * (count - 1));
      }
      if (hi < 0) continue;
      const int64_t n = (hi - lo) / stride + 1;
      tile.fields[kPartLo + 3 * p] = narrow(lo);
      tile.fields[kPartStride + 3 * p] = narrow(stride);
      tile.fields[kPartColumns + 3 * p] = narrow(n);
      tile.key_tiles += (n + key_tile - 1) / key_tile;
      gathered += (n + key_tile - 1) / key_tile * key_tile;
    }
    plan.computed += static_cast<int64_t>(end - begin) * gathered;
    tile.fields[kStepBegin] = 0;
    tile.fields[kStepEnd] = narrow(tile.key_tiles);
    tile.fields[kSplitGroup] = -1;
    tiles.push_back(tile);
    begin = end;
  }
  // Tiles of more than twice the median's steps (and at least kMinSplit)
  // are split into ranges of about that many.
  constexpr int64_t kMinSplit = 8;
  std::vector<int64_t> steps;
  for (const Tile& t : tiles) steps.push_back(t.key_tiles);
  int64_t median = 0;
  if (!steps.empty()) {
    std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2), steps.end());
    median = steps[steps.size() / 2];
  }
  plan.split_steps = std::max(kMinSplit, 2 * median);
  std::vector<Tile> split;
  for (const Tile& t : tiles) {
    if (t.key_tiles <= plan.split_steps) {
      split.push_back(t);
      continue;
    }
    const int64_t splits = (t.key_tiles + plan.split_steps - 1) / plan.split_steps;
    const int64_t each = (t.key_tiles + splits - 1) / splits;
    for (int64_t k = 0; k < splits; ++k) {
      Tile part = t;
      part.fields[kStepBegin] = narrow(k * each);
      part.fields[kStepEnd] = narrow(std::min(t.key_tiles, (k + 1) * each));
      part.key_tiles = part.fields[kStepEnd] - part.fields[kStepBegin];
      part.fields[kSplitGroup] = narrow(plan.split_groups);
      part.fields[kSplit] = narrow(k);
      part.fields[kSplits] = narrow(splits);
      part.fields[kSlot] = narrow(plan.slots);
      split.push_back(part);
    }
    ++plan.split_groups;
    plan.slots += splits;
  }
  tiles = std::move(split);
  std::stable_sort(tiles.begin(), tiles.end(), [](const Tile& a, const Tile& b) { return a.key_tiles > b.key_tiles; });
  plan.rows.reserve(order.size());
  for (int64_t i : order) plan.rows.push_back(static_cast<int32_t>(i));
  plan.tiles.reserve(tiles.size() * kTileFields);
  for (const Tile& t : tiles) plan.tiles.insert(plan.tiles.end(), t.fields.begin(), t.fields.end());
  return plan;
}

std::string describe(const AffineTiles& tiles) {
  std::string s = std::to_string(tiles.groups) + (tiles.groups == 1 ? " group" : " groups") +
                  " of rows (same strides and column residues), " + std::to_string(tiles.tile_count()) +
                  " tiles of at most " + std::to_string(tiles.tile_rows) + " rows; keys gathered in tiles of " +
                  std::to_string(tiles.key_tile) + "; " + with_commas(tiles.kept) + " of " +
                  with_commas(tiles.computed) + " computed scores kept";
  if (tiles.computed > 0) s += " (" + std::to_string(tiles.kept * 100 / tiles.computed) + "%)";
  if (tiles.split_groups > 0)
    s += "; " + std::to_string(tiles.split_groups) + (tiles.split_groups == 1 ? " long tile" : " long tiles") +
         " split into " + std::to_string(tiles.slots) + " ranges of at most " + std::to_string(tiles.split_steps) +
         " key tiles, merged by the last to finish";
  return s;
}

}  // namespace plait::tensor
