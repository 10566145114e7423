// Level formats: how a tensor of the tensor-algebra level is stored, one
// level per dimension. A dense level holds every coordinate of its dimension
// (a position is parent_position * extent + coordinate); a compressed level
// holds the coordinates present under each parent position, in `crd`, between
// `pos[parent]` and `pos[parent + 1]` (CSR's indices and indptr). The levels
// are stored outermost first in `mode_order` (level k stores dimension
// mode_order[k]), so CSR is (dense, compressed) in order (0, 1) and CSC the
// same levels in order (1, 0). A further kind (a singleton level for COO, an
// affine level for structured patterns) is a new enumerator and the two
// functions of lower_to_loops that iterate and locate a level.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plait::tensor {

enum class LevelKind : uint8_t { Dense, Compressed };

struct Format {
  std::vector<LevelKind> levels;
  std::vector<int> mode_order;

  static Format dense(int rank);
  static Format csr();
  static Format csc();
  int rank() const { return static_cast<int>(levels.size()); }
  bool is_dense() const;
  // The level that stores dimension `dim`.
  int level_of(int dim) const;
  // "dense", "csr", "csc", or the levels spelled out: "(dense, compressed; 1, 0)".
  std::string to_string() const;
  bool operator==(const Format& o) const { return levels == o.levels && mode_order == o.mode_order; }
};

}  // namespace plait::tensor
