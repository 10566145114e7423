// Tiles of an affine sparse pattern (ACSR): the level format of structured
// attention patterns, whose row i keeps, per part p, the columns
// first[p][i] + stride[p][i] * u for u < count[p][i] (at most two parts,
// disjoint). A dense tile of scores is worth computing only where its rows'
// columns line up: rows whose parts have the same strides and the same
// column residues (first mod stride) keep columns of the same progressions,
// so a tile of such rows gathers its keys at lo + stride * u and a row keeps
// a contiguous range of u. plan_affine_tiles groups the rows so, in order of
// their first columns, into tiles of `tile_rows`; a dilated window then
// costs its kept columns (plus the tile's edges), not the dense band around
// them, and a strided pattern is a dense causal mask over its own residue.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/attention_tiles.h"

namespace plait::tensor {

// One affine part: per row its first column, stride and count (count 0: no
// columns; the others are then ignored).
struct AffinePart {
  const int64_t* first = nullptr;
  const int64_t* stride = nullptr;
  const int64_t* count = nullptr;
};

using runtime::kAffineParts;
using runtime::kTileFields;
using runtime::TileField;

struct AffineTiles {
  // The query rows in tile order.
  std::vector<int32_t> rows;
  // Per tile, kTileFields ints (runtime/attention_tiles.h). A tile of more key tiles than
  // `split_steps` (global rows that keep every key) is split into ranges
  // of its key tiles, each a tile of its own that leaves its partial
  // softmax in a slot, merged by the last of them to finish: no tile runs
  // much longer than the others. Tiles of more steps come first, so that
  // the longest run from the start.
  std::vector<int32_t> tiles;
  // Per row, per part, its first column and count (the stride is its tile's).
  std::vector<int32_t> row_parts;
  int64_t kept = 0;      // stored entries: the scores the pattern keeps
  int64_t computed = 0;  // scores the tiles compute (each tile's rows by its gathered keys, keys in tiles of key_tile)
  int64_t groups = 0;    // groups of rows with the same strides and residues
  int64_t split_groups = 0, slots = 0;  // long tiles split, and their splits
  int64_t split_steps = 0;
  int tile_rows = 0, key_tile = 0;
  size_t tile_count() const { return tiles.size() / kTileFields; }
};

// Throws std::invalid_argument when a row's part leaves [0, columns), or
// when the pattern is too large for 32-bit tile fields.
AffineTiles plan_affine_tiles(int64_t rows, int64_t columns, const std::vector<AffinePart>& parts, int tile_rows,
                              int key_tile);

// "2 groups of rows, 256 tiles of 64 rows; keys gathered in tiles of 64;
// 1,234,567 of 1,400,000 computed scores kept (88%)".
std::string describe(const AffineTiles& tiles);

}  // namespace plait::tensor
