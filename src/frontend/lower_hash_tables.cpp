// Dicts and sets with integer keys, lowered onto arrays as lists are.
//
// A dict is CPython's compact layout: its entries in insertion order (one
// array each for the keys, the values and a live flag) and an index of
// slots (a power-of-two array of entry positions, -1 where empty) probed
// linearly from a hash of the key. Removing a key clears its live flag and
// leaves its slot (a tombstone); inserting a key not present appends an
// entry, and when the entries would pass two thirds of the slots both are
// rebuilt from the live entries. So iteration is in insertion order, as
// Python's, and a key removed and inserted again comes last, as in Python.
// A set is a dict without values; Python iterates a set in its table's
// order, which this layout does not reproduce, so iterating one is refused.
#include "frontend/list_lowering.h"
#include "frontend/lowerer.h"
#include "runtime/abi.h"

namespace plait::lowering {

using namespace lists;

std::string hash_part_name(const std::string& table, const char* part) {
  return std::string(part) + "(" + table + ")";
}

namespace {

constexpr int64_t kFirstCapacity = 8;
const ScalarType kU64{ScalarKind::UInt64, false};

}  // namespace

// ---------------------------------------------------------------- the parts of a table

HashPtr Lowerer::named_table(const std::string& name, SourceLoc loc) {
  auto p = std::make_shared<HashParts>();
  p->name = name;
  p->type = *types_.at(name).hash;
  auto array = [&](const char* part) {
    if (!inferring_) {
      ir::ArrayVar a = locals_.at(hash_part_name(name, part)).array;
      a->indices_in_range = true;  // every access is made here
      return a;
    }
    auto a = std::make_shared<ir::ArrayInfo>();
    a->name = hash_part_name(name, part);
    a->type = *types_.at(a->name).array;
    a->loc = loc;
    return a;
  };
  auto scalar = [&](const char* part) {
    if (!inferring_) return locals_.at(hash_part_name(name, part)).var;
    return std::make_shared<ir::VarInfo>(hash_part_name(name, part), ScalarType::py_int(), loc, false);
  };
  if (p->type.key) {
    p->keys = array("keys");
    p->live = array("live");
    p->slots = array("slots");
    if (!p->type.set) p->values = array("values");
  }
  p->used = scalar("used");
  p->size = scalar("len");
  return p;
}

void Lowerer::record_table(const std::string& name, const HashType& given, SourceLoc loc) {
  if (!inferring_) return;
  LocalType& lt = types_[name];
  if (lt.scalar || lt.array || lt.sparse || lt.list || lt.tuple_size)
    type_error("'" + name + "' is a " + (given.set ? "set" : "dict") +
                   " here but holds another kind of value elsewhere; a variable keeps one type",
               loc);
  if (!lt.hash) {
    lt.hash = HashType{std::nullopt, std::nullopt, given.set};
    lt.first_loc = loc;
    changed_ = true;
  }
  HashType& have = *lt.hash;
  if (have.set != given.set)
    type_error("'" + name + "' is a " + (have.set ? "set" : "dict") + " elsewhere but a " +
                   (given.set ? "set" : "dict") + " here",
               loc);
  auto widen = [&](std::optional<ScalarType>& slot, const std::optional<ScalarType>& more) {
    if (!more) return;
    ScalarType u = slot ? unify(*slot, *more) : *more;
    if (!slot || u != *slot) {
      slot = u;
      changed_ = true;
    }
  };
  widen(have.key, given.key);
  widen(have.value, given.value);
  if (have.key && !have.key->is_int() && !have.key->is_bool())
    unsupported("the keys of a dict or set in a kernel are integers; '" + name + "' gets " + describe(*have.key), loc);
  auto local_array = [&](const char* part, ScalarKind kind) {
    std::optional<ArrayType>& a = types_[hash_part_name(name, part)].array;
    const ArrayType t{kind, 1, Layout::C};
    if (a != t) {
      a = t;
      changed_ = true;
    }
  };
  if (have.key) {
    local_array("keys", have.key->kind);
    local_array("live", ScalarKind::Bool);
    local_array("slots", ScalarKind::Int64);
    if (!have.set && have.value) local_array("values", have.value->kind);
  }
  for (const char* part : {"used", "len"}) {
    std::optional<ScalarType>& v = types_[hash_part_name(name, part)].scalar;
    if (!v) {
      v = ScalarType::py_int();
      changed_ = true;
    }
  }
}

void Lowerer::settle_tables() {
  // A table never given a key holds ints (and float values): it stays empty.
  std::vector<std::string> open;
  for (const auto& [name, lt] : types_)
    if (lt.hash && (!lt.hash->key || (!lt.hash->set && !lt.hash->value))) open.push_back(name);
  for (const std::string& name : open) {
    HashType t{ScalarType::py_int(), std::nullopt, types_.at(name).hash->set};
    if (!t.set) t.value = ScalarType::py_float();
    record_table(name, t, types_.at(name).first_loc);
  }
}

// ---------------------------------------------------------------- probing

Expr Lowerer::table_slot(const HashParts& t, const Expr& key, SourceLoc loc) {
  // A multiplicative hash of the key's bits (the high bits folded down),
  // masked to the power-of-two number of slots.
  Expr bits = ir::Cast::make(kU64, cast(key, ScalarType::py_int()), false, loc);
  Expr h = ir::Binary::make(ir::BinaryOp::Mul, bits,
                            ir::IntImm::make(static_cast<int64_t>(0x9E3779B97F4A7C15ULL), kU64, loc), kU64, false, loc);
  h = ir::Binary::make(ir::BinaryOp::BitXor, h,
                       ir::Binary::make(ir::BinaryOp::Shr, h, ir::IntImm::make(29, kU64, loc), kU64, false, loc), kU64,
                       false, loc);
  Expr mask = ir::Cast::make(kU64, sub(ir::ArrayDim::make(t.slots, 0, loc), int_imm(1, loc), loc), false, loc);
  return ir::Cast::make(ScalarType::py_int(), ir::Binary::make(ir::BinaryOp::BitAnd, h, mask, kU64, false, loc), false,
                        loc);
}

Expr Lowerer::next_slot(const HashParts& t, const Expr& slot, SourceLoc loc) {
  return ir::Binary::make(ir::BinaryOp::BitAnd, add(slot, int_imm(1, loc), loc),
                          sub(ir::ArrayDim::make(t.slots, 0, loc), int_imm(1, loc), loc), ScalarType::py_int(), false,
                          loc);
}

ir::Var Lowerer::find_entry(const HashParts& t, const Expr& key, std::vector<Stmt>& out, SourceLoc loc) {
  // The live entry holding `key`, or -1: probe from its slot to an empty one.
  ir::Var at = temp_var(ScalarType::py_int(), loc), slot = temp_var(ScalarType::py_int(), loc),
          entry = temp_var(ScalarType::py_int(), loc);
  out.push_back(ir::Assign::make(at, int_imm(-1, loc), loc));
  out.push_back(ir::Assign::make(slot, table_slot(t, key, loc), loc));
  Expr k = cast(key, ScalarType{t.type.key->kind, false});
  std::vector<Stmt> step;
  step.push_back(ir::Assign::make(entry, ir::Load::make(t.slots, {var(slot, loc)}, false, loc), loc));
  step.push_back(ir::If::make(ir::Compare::make(ir::CompareOp::EQ, var(entry, loc), int_imm(-1, loc), loc),
                              block({ir::Break::make(loc)}, loc), nullptr, loc));
  Expr same = ir::Logical::make(
      ir::LogicalOp::And, ir::Load::make(t.live, {var(entry, loc)}, false, loc),
      ir::Compare::make(ir::CompareOp::EQ, ir::Load::make(t.keys, {var(entry, loc)}, false, loc), k, loc), loc);
  step.push_back(
      ir::If::make(same, block({ir::Assign::make(at, var(entry, loc), loc), ir::Break::make(loc)}, loc), nullptr, loc));
  step.push_back(ir::Assign::make(slot, next_slot(t, var(slot, loc), loc), loc));
  out.push_back(ir::While::make(ir::BoolImm::make(true, loc), block(step, loc), loc));
  return at;
}

void Lowerer::place_entry(const HashParts& t, const Expr& entry, std::vector<Stmt>& out, SourceLoc loc) {
  // Entry `entry` into the first empty slot from its key's.
  ir::Var slot = temp_var(ScalarType::py_int(), loc);
  out.push_back(ir::Assign::make(slot, table_slot(t, ir::Load::make(t.keys, {entry}, false, loc), loc), loc));
  Expr taken = ir::Compare::make(ir::CompareOp::NE, ir::Load::make(t.slots, {var(slot, loc)}, false, loc),
                                 int_imm(-1, loc), loc);
  out.push_back(
      ir::While::make(taken, block({ir::Assign::make(slot, next_slot(t, var(slot, loc), loc), loc)}, loc), loc));
  out.push_back(ir::Store::make(t.slots, {var(slot, loc)}, entry, false, loc));
}

void Lowerer::allocate_table(const HashParts& t, const Expr& capacity, std::vector<Stmt>& out, SourceLoc loc) {
  auto fresh = [&](const ir::ArrayVar& a, ir::FillKind fill, Expr value) {
    ir::ArrayVar tmp = temp_array(a->type, loc);
    tmp->indices_in_range = true;
    out.push_back(ir::Allocate::make(tmp, {capacity}, fill, value, loc));
    return tmp;
  };
  std::vector<std::pair<ir::ArrayVar, ir::ArrayVar>> binds = {
      {t.keys, fresh(t.keys, ir::FillKind::Uninitialized, nullptr)},
      {t.live, fresh(t.live, ir::FillKind::Zeros, nullptr)},
      {t.slots, fresh(t.slots, ir::FillKind::Value, ir::IntImm::make(-1, ScalarType::i64(), loc))}};
  if (t.values) binds.push_back({t.values, fresh(t.values, ir::FillKind::Uninitialized, nullptr)});
  for (const auto& [dst, src] : binds) out.push_back(ir::ArrayBind::make(dst, src, loc));
}

void Lowerer::empty_table(const HashParts& t, std::vector<Stmt>& out, SourceLoc loc) {
  allocate_table(t, int_imm(kFirstCapacity, loc), out, loc);
  out.push_back(ir::Assign::make(t.used, int_imm(0, loc), loc));
  out.push_back(ir::Assign::make(t.size, int_imm(0, loc), loc));
}

void Lowerer::make_room(const HashParts& t, std::vector<Stmt>& out, SourceLoc loc) {
  // Before an insert: when the entries would pass two thirds of the slots,
  // rebuild both from the live entries, with slots for three times their
  // number (a power of two).
  Expr full = ir::Compare::make(ir::CompareOp::GT,
                                ir::Binary::make(ir::BinaryOp::Mul, add(var(t.used, loc), int_imm(1, loc), loc),
                                                 int_imm(3, loc), ScalarType::py_int(), false, loc),
                                ir::Binary::make(ir::BinaryOp::Mul, ir::ArrayDim::make(t.slots, 0, loc),
                                                 int_imm(2, loc), ScalarType::py_int(), false, loc),
                                loc);
  std::vector<Stmt> rebuild;
  ir::Var capacity = temp_var(ScalarType::py_int(), loc);
  rebuild.push_back(ir::Assign::make(capacity, int_imm(kFirstCapacity, loc), loc));
  Expr small = ir::Compare::make(ir::CompareOp::LE, var(capacity, loc),
                                 ir::Binary::make(ir::BinaryOp::Mul, add(var(t.size, loc), int_imm(1, loc), loc),
                                                  int_imm(3, loc), ScalarType::py_int(), false, loc),
                                 loc);
  rebuild.push_back(
      ir::While::make(small,
                      block({ir::Assign::make(capacity,
                                              ir::Binary::make(ir::BinaryOp::Mul, var(capacity, loc), int_imm(2, loc),
                                                               ScalarType::py_int(), false, loc),
                                              loc)},
                            loc),
                      loc));
  // The old arrays, kept while the live entries move.
  auto old = std::make_shared<HashParts>(t);
  std::vector<std::pair<ir::ArrayVar, ir::ArrayVar>> saved = {{t.keys, nullptr}, {t.live, nullptr}};
  if (t.values) saved.push_back({t.values, nullptr});
  for (auto& [from, to] : saved) {
    to = temp_array(from->type, loc);
    to->indices_in_range = true;
    rebuild.push_back(ir::ArrayBind::make(to, from, loc));
  }
  old->keys = saved[0].second;
  old->live = saved[1].second;
  if (t.values) old->values = saved[2].second;
  allocate_table(t, var(capacity, loc), rebuild, loc);
  ir::Var e = temp_var(ScalarType::py_int(), loc), n = temp_var(ScalarType::py_int(), loc);
  rebuild.push_back(ir::Assign::make(n, int_imm(0, loc), loc));
  std::vector<Stmt> move;
  move.push_back(
      ir::Store::make(t.keys, {var(n, loc)}, ir::Load::make(old->keys, {var(e, loc)}, false, loc), false, loc));
  if (t.values)
    move.push_back(
        ir::Store::make(t.values, {var(n, loc)}, ir::Load::make(old->values, {var(e, loc)}, false, loc), false, loc));
  move.push_back(ir::Store::make(t.live, {var(n, loc)}, ir::BoolImm::make(true, loc), false, loc));
  place_entry(t, var(n, loc), move, loc);
  move.push_back(ir::Assign::make(n, add(var(n, loc), int_imm(1, loc), loc), loc));
  rebuild.push_back(ir::For::make(
      e, int_imm(0, loc), var(t.used, loc), int_imm(1, loc),
      block({ir::If::make(ir::Load::make(old->live, {var(e, loc)}, false, loc), block(move, loc), nullptr, loc)}, loc),
      {}, loc));
  rebuild.push_back(ir::Assign::make(t.used, var(n, loc), loc));
  out.push_back(ir::If::make(full, block(rebuild, loc), nullptr, loc));
}

void Lowerer::insert_entry(const HashParts& t, const Expr& key, const Expr& value, std::vector<Stmt>& out,
                           SourceLoc loc) {
  // A key present takes the new value (its place in the order stays, as in Python).
  ir::Var k = temp_var(ScalarType{t.type.key->kind, false}, loc);
  out.push_back(ir::Assign::make(k, cast(key, ScalarType{t.type.key->kind, false}, true), loc));
  ir::Var v;
  if (t.values) {
    v = temp_var(ScalarType{t.type.value->kind, false}, loc);
    out.push_back(ir::Assign::make(v, cast(value, ScalarType{t.type.value->kind, false}, true), loc));
  }
  ir::Var at = find_entry(t, var(k, loc), out, loc);
  std::vector<Stmt> present, absent;
  if (t.values) present.push_back(ir::Store::make(t.values, {var(at, loc)}, var(v, loc), false, loc));
  make_room(t, absent, loc);
  absent.push_back(ir::Store::make(t.keys, {var(t.used, loc)}, var(k, loc), false, loc));
  if (t.values) absent.push_back(ir::Store::make(t.values, {var(t.used, loc)}, var(v, loc), false, loc));
  absent.push_back(ir::Store::make(t.live, {var(t.used, loc)}, ir::BoolImm::make(true, loc), false, loc));
  place_entry(t, var(t.used, loc), absent, loc);
  absent.push_back(ir::Assign::make(t.used, add(var(t.used, loc), int_imm(1, loc), loc), loc));
  absent.push_back(ir::Assign::make(t.size, add(var(t.size, loc), int_imm(1, loc), loc), loc));
  out.push_back(ir::If::make(ir::Compare::make(ir::CompareOp::GE, var(at, loc), int_imm(0, loc), loc),
                             present.empty() ? block({}, loc) : block(present, loc), block(absent, loc), loc));
}

}  // namespace plait::lowering
