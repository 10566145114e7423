// The layout of a tile of the fused attention kernel
// (cuda_sparse_attention.cuh), between the plan that makes the tiles
// (tensor/affine_tiles.h) and the kernel, which receives these values as
// definitions printed before its text (jit/cuda_sparse_attention.cpp).
#pragma once

namespace plait::runtime {

inline constexpr int kAffineParts = 2;  // affine parts a row has at most
// The kernel's tile: query rows per block (16 per warp) and keys per step.
inline constexpr int kTileRows = 64;
inline constexpr int kTileKeys = 64;

// A tile's fields, ints in this order.
enum TileField : int {
  kRowBegin,     // its first position in the plan's rows
  kRowCount,     // its rows
  kPartLo,       // per part (three fields each): the progression's first column,
  kPartStride,   //   its stride
  kPartColumns,  //   and its number of columns (0: no row of the tile has the part)
  kStepBegin = 2 + 3 * kAffineParts,  // the key tiles (steps) over its parts in order that it runs: from
  kStepEnd,                           //   this one to that one
  kSplitGroup,  // -1, or the tile is one of the splits of a long tile: their group
  kSplit,       //   which split it is
  kSplits,      //   how many there are
  kSlot,        //   the group's first slot of partial results
  kTileFields
};

}  // namespace plait::runtime
