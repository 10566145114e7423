#include "tensor/format.h"

namespace plait::tensor {

Format Format::dense(int rank) {
  Format f;
  for (int d = 0; d < rank; ++d) {
    f.levels.push_back(LevelKind::Dense);
    f.mode_order.push_back(d);
  }
  return f;
}

Format Format::csr() {
  return Format{{LevelKind::Dense, LevelKind::Compressed}, {0, 1}};
}

Format Format::csc() {
  return Format{{LevelKind::Dense, LevelKind::Compressed}, {1, 0}};
}

bool Format::is_dense() const {
  for (LevelKind k : levels)
    if (k != LevelKind::Dense) return false;
  return true;
}

int Format::level_of(int dim) const {
  for (int k = 0; k < rank(); ++k)
    if (mode_order[k] == dim) return k;
  return -1;
}

std::string Format::to_string() const {
  if (is_dense()) return "dense";
  if (*this == csr()) return "csr";
  if (*this == csc()) return "csc";
  std::string s = "(";
  for (int k = 0; k < rank(); ++k)
    s += std::string(k ? ", " : "") + (levels[k] == LevelKind::Dense ? "dense" : "compressed");
  s += ";";
  for (int k = 0; k < rank(); ++k) s += " " + std::to_string(mode_order[k]);
  return s + ")";
}

}  // namespace plait::tensor
