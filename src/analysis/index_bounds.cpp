// Lower-bound analysis of integer expressions (see index_bounds.h).
#include "analysis/index_bounds.h"

#include <algorithm>
#include <limits>

namespace plait::analysis {

namespace {

// Bounds stay far from overflow: anything beyond this is "unknown".
constexpr int64_t kLimit = int64_t{1} << 48;

std::optional<int64_t> checked(int64_t v) {
  if (v > kLimit || v < -kLimit) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int64_t> lower_bound(const ir::Expr& e, const LowerBounds& known) {
  if (!e || !e->type.is_int()) return std::nullopt;
  // Unsigned values below 64 bits are never negative, also as int64.
  if (e->type.is_unsigned() && e->type.bits() < 64) return 0;
  switch (e->kind) {
    case ir::NodeKind::IntImm: return checked(e->as<ir::IntImm>()->value);
    case ir::NodeKind::ArrayDim: return 0;
    case ir::NodeKind::Load:
      if (e->as<ir::Load>()->array->nonnegative) return 0;
      return std::nullopt;
    case ir::NodeKind::VarRef: {
      auto it = known.find(e->as<ir::VarRef>()->var.get());
      if (it == known.end()) return std::nullopt;
      return it->second;
    }
    case ir::NodeKind::Cast: {
      auto c = e->as<ir::Cast>();
      if (c->value->type.is_bool()) return 0;
      // A cast from unsigned to a signed type of no more bits may wrap to
      // a negative value.
      if (c->value->type.is_unsigned() && c->type.bits() <= c->value->type.bits()) return std::nullopt;
      return lower_bound(c->value, known);
    }
    case ir::NodeKind::Select: {
      auto s = e->as<ir::Select>();
      auto a = lower_bound(s->t, known), b = lower_bound(s->f, known);
      if (!a || !b) return std::nullopt;
      return std::min(*a, *b);
    }
    case ir::NodeKind::Call: {
      auto c = e->as<ir::Call>();
      if (c->fn == ir::Intrinsic::Abs) return 0;
      return std::nullopt;
    }
    case ir::NodeKind::Binary: {
      auto b = e->as<ir::Binary>();
      auto la = lower_bound(b->a, known);
      auto lb = lower_bound(b->b, known);
      auto ib = b->b->as<ir::IntImm>();
      switch (b->op) {
        case ir::BinaryOp::Add:
          if (la && lb) return checked(*la + *lb);
          return std::nullopt;
        case ir::BinaryOp::Sub:
          if (la && ib) return checked(*la - ib->value);
          return std::nullopt;
        case ir::BinaryOp::Mul:
          if (la && lb && *la >= 0 && *lb >= 0) return checked(*la * *lb);
          return std::nullopt;
        case ir::BinaryOp::FloorDiv:
        case ir::BinaryOp::Shr:
          if (la && *la >= 0 && ib && ib->value > 0) return 0;
          return std::nullopt;
        case ir::BinaryOp::Mod:
          // Python's % takes the sign of the divisor.
          if (lb && *lb > 0) return 0;
          return std::nullopt;
        case ir::BinaryOp::Max:
        case ir::BinaryOp::PyMax:
          if (la && lb) return std::max(*la, *lb);
          return la ? la : lb;
        case ir::BinaryOp::Min:
        case ir::BinaryOp::PyMin:
          if (la && lb) return std::min(*la, *lb);
          return std::nullopt;
        case ir::BinaryOp::BitAnd:
          if ((la && *la >= 0) || (lb && *lb >= 0)) return 0;
          return std::nullopt;
        default: return std::nullopt;
      }
    }
    default: return std::nullopt;
  }
}

}  // namespace plait::analysis
