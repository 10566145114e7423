// The lowering's internal interface, shared by the scalar part
// (lower_to_ir.cpp) and the array-expression part (lower_array_exprs.cpp).
// Not part of the compiler's API: include frontend/lower_to_ir.h instead.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/definite_assignment.h"
#include "ir/ir.h"
#include "support/compile_options.h"
#include "tensor/index_notation.h"

namespace plait::lowering {

using ir::Expr;
using ir::Stmt;

// Statements that computing an element needs first (the loops of a
// reduction), in groups. The loop-nest builder places each group at the
// outermost loop level whose index it reads, which hoists loop-invariant
// reductions (a row sum used by every element of the row is computed once
// per row).
struct Sink {
  std::vector<std::vector<Stmt>> groups;
};

struct Tensor;

// A view of one array (`path[:, k]`) that an assignment may copy into a small
// temporary before its loop nest stores, when the view reads elements of the
// target that the nest overwrites: while `copy` is set, the view's elements
// are loads of the copy.
struct ViewSnapshot {
  std::shared_ptr<const Tensor> view;  // the view reading the array itself
  const ast::Expr* node = nullptr;     // its syntax (for explain())
  ir::ArrayVar copy;
};

// One array an expression reads.
struct TensorRead {
  ir::ArrayVar array;
  // The syntax that read it, or null once the read is not aligned with the
  // expression's elements (broadcast, reduced, transposed).
  const ast::Expr* node = nullptr;
  std::shared_ptr<ViewSnapshot> via;  // the outermost view it was read through
};

// An array-valued expression, evaluated lazily element by element: lowering
// an assignment builds one loop nest over the target and asks for the
// element at the nest's indices, so sub-expressions never become
// temporaries.
struct Tensor {
  ScalarType type;                  // element type (strong)
  std::vector<Expr> shape;          // extent of each dimension (int)
  std::vector<bool> unit;           // extent is 1 at compile time (broadcasts)
  std::vector<std::string> labels;  // per dimension: the slice text it came from, for sliced-index pragmas
  // The element at `index` (one int per dimension, each in range); may add
  // groups of statements to `sink`.
  std::function<Expr(const std::vector<Expr>& index, Sink& sink)> element;
  // Arrays read, with the syntax that read them (for overlap checks).
  std::vector<TensorRead> reads;
  // Set when the tensor is a view of one array (an assignment target): the
  // array and the array index of each view index.
  ir::ArrayVar array;
  std::function<std::vector<Expr>(const std::vector<Expr>& index)> array_index;
  const ast::Expr* source = nullptr;
  // Why it cannot be assigned to or updated in place (a gather, a reshape);
  // null: it can, when `array` is set.
  const char* not_assignable = nullptr;
  size_t rank() const { return shape.size(); }
};
using TensorPtr = std::shared_ptr<const Tensor>;

// One loop of a nest built for an array statement.
struct LoopDim {
  ir::Var var;
  Expr extent;
  std::string label;
  bool reduction = false;
  ir::ReduceOp op = ir::ReduceOp::Add;
  bool vectorizable = true;  // false for reductions whose update is not a simple combine (argmax)
  ir::LoopSchedule schedule;
};

struct AlgebraValue;

// The element type of a list (lower_lists.cpp): one number, or a tuple of
// numbers; `items` is empty while no element has been seen.
struct ListType {
  std::vector<ScalarType> items;
  bool tuple = false;
  bool known() const { return !items.empty(); }
};

// A list in the IR: one 1-D array per item of its elements (their extent is
// the capacity) and the number of elements. Python lists are objects that
// names share; here each list has one name (a second name is refused), so a
// list is its arrays and its length.
struct ListParts {
  std::string name;  // the local's name (for messages), or "list" for the new arrays of an assignment
  ListType type;
  std::vector<ir::ArrayVar> columns;  // empty while the type is not known (inference)
  ir::Var length;                     // int64
};
using ListPtr = std::shared_ptr<const ListParts>;

// The types of a dict's keys and values or a set's keys (lower_dicts.cpp);
// unknown while nothing has been stored.
struct HashType {
  std::optional<ScalarType> key, value;
  bool set = false;
};

// A dict or set in the IR (lower_hash_tables.cpp): its entries in insertion
// order (keys, values for a dict, live flags), the slots indexing them, the
// entries used and the live ones (its len()).
struct HashParts {
  std::string name;
  HashType type;
  ir::ArrayVar keys, values, live, slots;  // null while the key type is not known (inference)
  ir::Var used, size;
};
using HashPtr = std::shared_ptr<const HashParts>;

// Thrown in the inference phase when an expression reads a local whose type
// is not known yet; the statement is retried in the next round.
struct TypeNotKnownYet {};

// What an expression evaluates to in the front end. Only scalars become IR
// expressions; the rest exist at compile time (shapes, modules, dtypes).
struct Value {
  enum class Kind { Scalar, Array, Tensor, Tuple, Function, DType, None, String, Algebra, List, Dict };
  Kind kind = Kind::None;
  Expr scalar;
  ir::ArrayVar array;
  TensorPtr tensor;  // Tensor: an array-valued expression, evaluated lazily
  std::shared_ptr<const AlgebraValue> algebra;  // Algebra
  ListPtr list;                                 // List
  HashPtr table;                                // Dict (a dict or a set; null for a display)
  std::vector<Value> elems;
  std::string name;  // Function: qualified name ("numpy.sqrt", "builtins.max"); String: the text
  ScalarKind dtype = ScalarKind::Float64;
  SourceLoc loc;
  const ast::Expr* node = nullptr;  // the syntax an Array value came from (overlap checks)

  static Value of(Expr e) {
    Value v;
    v.kind = Kind::Scalar;
    v.loc = e->loc;
    v.scalar = std::move(e);
    return v;
  }
  static Value of_array(ir::ArrayVar a, SourceLoc l) {
    Value v;
    v.kind = Kind::Array;
    v.array = std::move(a);
    v.loc = l;
    return v;
  }
  static Value function(std::string name, SourceLoc l) {
    Value v;
    v.kind = Kind::Function;
    v.name = std::move(name);
    v.loc = l;
    return v;
  }
  static Value of_tensor(TensorPtr t, SourceLoc l) {
    Value v;
    v.kind = Kind::Tensor;
    v.tensor = std::move(t);
    v.loc = l;
    return v;
  }
  static Value of_algebra(std::shared_ptr<const AlgebraValue> a, SourceLoc l) {
    Value v;
    v.kind = Kind::Algebra;
    v.algebra = std::move(a);
    v.loc = l;
    return v;
  }
  static Value of_list(ListPtr p, SourceLoc l) {
    Value v;
    v.kind = Kind::List;
    v.list = std::move(p);
    v.loc = l;
    return v;
  }
  static Value of_table(HashPtr t, SourceLoc l) {
    Value v;
    v.kind = Kind::Dict;
    v.table = std::move(t);
    v.loc = l;
    return v;
  }
  static Value dtype_of(ScalarKind k, SourceLoc l) {
    Value v;
    v.kind = Kind::DType;
    v.dtype = k;
    v.loc = l;
    return v;
  }
};

// A value of the tensor-algebra level (lower_sparse.cpp): what a program of
// index-notation statements computes, a sparse matrix or a dense array, not
// run until it is needed (a dense result is run where its expression is;
// a sparse one where it is returned or used).
struct AlgebraValue {
  tensor::ProgramPtr program;
  bool matrix = false;                   // SciPy's matrix class (csr_matrix): `*` is a product
  ScalarKind index = ScalarKind::Int32;  // a sparse result's index dtype
  // A matrix product's operands, when the program's result is one: a chain
  // of products can be associated the other way.
  std::vector<Value> factors;
  // A program that computes the same result another way (the other
  // association of a chain), or null; the cheaper runs, chosen at run time.
  tensor::ProgramPtr other_association;
  bool sparse() const { return program->result->is_sparse(); }
};

// The parts of a subscript already lowered, by their syntax.
using LoweredParts = std::map<const ast::Expr*, Value>;

// The refusal of stores through an integer array (`y[idx] = v`, `y[idx] += v`).
inline constexpr const char* kAssignThroughArrayIndex =
    "assigning through an array index (y[idx] = v, y[idx] += v) is not supported: write a loop over the indices, "
    "or np.add.at(y, idx, v) to accumulate";
// The refusal of stores through a reshape (`a.reshape(n, m)[i] = v`).
inline constexpr const char* kAssignThroughReshape =
    "assigning through a reshape (a.reshape(...)[i] = v) is not supported: assign to the array's own elements";

// The type a local name has after inference: a scalar or an array.
struct LocalType {
  std::optional<ScalarType> scalar;
  std::optional<ArrayType> array;
  std::optional<SparseType> sparse;
  std::optional<ListType> list;      // a list: its arrays and length are the locals list_column_name, list_length_name
  std::optional<size_t> tuple_size;  // a tuple of numbers: its items are the locals tuple_item_name
  std::optional<HashType> hash;      // a dict or set: its parts are the locals hash_part_name
  SourceLoc first_loc;
};

// The locals that hold a list's arrays and length and a tuple's items: names
// no Python identifier can have.
std::string list_column_name(const std::string& list, size_t item);
std::string list_length_name(const std::string& list);
std::string tuple_item_name(const std::string& tuple, size_t item);
std::string hash_part_name(const std::string& table, const char* part);
// `[a, b]`, `[x] * n` or `n * [x]`: a list display that makes a list object.
bool is_list_display(const ast::Expr& e);

struct Local {
  ir::Var var;
  ir::ArrayVar array;
};

const char* value_kind_name(Value::Kind k);
std::string describe(ScalarType t);
std::string describe(const ArrayType& t);
// Structural equality of two syntax trees, for `#pragma atomic` on
// `x[k] = max(x[k], e)`.
bool same_tree(const ast::Expr* a, const ast::Expr* b);
void collect_written_arrays(const ast::StmtList& body, std::set<std::string>& out);
// The names one statement at the function's top level assigns, and nothing else.
std::set<std::string> assigned_once_at_top(const ast::StmtList& body);

class Lowerer {
 public:
  Lowerer(const SourceFile& file, const Signature& signature, const Globals& globals, const CompileOptions& options)
      : file_(file), signature_(signature), globals_(globals), options_(options) {}

  ir::Function run(const ast::FunctionDef& fn);

 private:
  // ------------------------------------------------------------ errors
  [[noreturn]] void fail(ErrorKind kind, const std::string& message, SourceLoc loc) const {
    throw CompileError(kind, message, file_, loc);
  }
  [[noreturn]] void unsupported(const std::string& message, SourceLoc loc) const {
    fail(ErrorKind::Unsupported, message, loc);
  }
  [[noreturn]] void type_error(const std::string& message, SourceLoc loc) const { fail(ErrorKind::Type, message, loc); }

  // ------------------------------------------------------------ names
  void declare_params(const ast::FunctionDef& fn);
  void record_scalar(const std::string& name, ScalarType t, SourceLoc loc);
  void record_array(const std::string& name, const ArrayType& t, SourceLoc loc);
  Value lookup_name(const ast::Name& name);
  // Python's UnboundLocalError for locals assigned on some paths only (see
  // frontend/definite_assignment.h): each such local has a bool flag, set by
  // every assignment, and a read that may find it unassigned is preceded by
  // an Assert on the flag (pending_), which holds as well when the read is
  // not reached (guards_).
  void check_bound(const ast::Name& name);
  // `ok`, or true where the operand being lowered is not reached (guards_):
  // the condition of a check that pending_ runs before the statement.
  Expr unless_skipped(Expr ok, SourceLoc loc) const;
  void mark_bound(const std::string& name, std::vector<Stmt>& out, SourceLoc loc);
  // Whether pending_ allocates an array, which loop headers cannot take
  // (checks and other statements run before the loop, or before each test
  // of a while loop).
  bool pending_allocates() const;
  Value global_value(const std::string& id, SourceLoc loc);

  // ------------------------------------------------------------ statements
  void lower_block(const ast::StmtList& body, std::vector<Stmt>& out);
  void lower_stmt(const ast::Stmt& s, std::vector<Stmt>& out);
  void lower_assign(const ast::Assign& a, std::vector<Stmt>& out);
  void assign_to(const ast::Expr& target, const Value& value, std::vector<Stmt>& out, SourceLoc loc);
  void assign_scalar(const std::string& name, Expr value, std::vector<Stmt>& out, SourceLoc loc);
  void assign_array(const std::string& name, const Value& value, std::vector<Stmt>& out, SourceLoc loc);
  void lower_aug_assign(const ast::AugAssign& a, std::vector<Stmt>& out);
  void lower_atomic(const ast::Stmt& s, std::vector<Stmt>& out);
  void lower_for(const ast::For& f, std::vector<Stmt>& out);
  void lower_return(const ast::Return& r, std::vector<Stmt>& out);
  ir::LoopSchedule parse_loop_pragmas(const ast::Stmt& s, bool is_prange);
  void check_pragmas_allowed(const ast::Stmt& s);

  // ------------------------------------------------------------ expressions
  Value lower(const ast::Expr& e);
  // An arithmetic operator on lowered operands (arrays, array expressions, scalars).
  Value binary_value(const ast::BinOp& b, const Value& lv, const Value& rv);
  Value unary_value(const ast::UnaryOp& u, const Value& operand);
  Value lower_call(const ast::Call& c, ir::ArrayVar into = nullptr);
  Value lower_subscript(const ast::Subscript& s);
  Value lower_attribute(const ast::Attribute& a);
  Expr scalar(const ast::Expr& e, const char* context);
  Expr as_scalar(const Value& v, const char* context, SourceLoc loc);
  // The indices of one element. With `gather` (reads), an integer array
  // among the parts ends the walk: the parts lowered so far are recorded
  // there and the result is empty.
  std::vector<Expr> element_indices(const ir::ArrayVar& array, const ast::Expr& index, SourceLoc loc,
                                    LoweredParts* gather = nullptr);
  // x converted to t when x is a Python int meeting a narrower or unsigned
  // strong integer type t (NEP 50): a literal that fits converts silently,
  // anything else through a checked cast that raises OverflowError.
  Expr fit_python_int(Expr x, ScalarType t);
  Expr binary(ast::BinOpKind op, Expr a, Expr b, SourceLoc loc);
  Expr compare(ast::CmpOpKind op, Expr a, Expr b, SourceLoc loc);
  Expr compare_signed_with_uint64(ir::CompareOp o, Expr a, Expr b, SourceLoc loc);
  Expr truthy(Expr e, SourceLoc loc);
  // The same value as a Python number (weak) or a NumPy scalar (strong).
  Expr with_weakness(Expr e, bool weak);
  Expr cast(Expr e, ScalarType t, bool checked = false);
  Value allocate(const std::string& fn, const ast::Call& c, ir::ArrayVar into);
  std::vector<Expr> shape_of(const Value& v, SourceLoc loc);
  ScalarKind dtype_arg(const Value& v, SourceLoc loc);
  Value call_numpy(const std::string& fn, const ast::Call& c, const std::vector<Value>& args);
  Value call_math(const std::string& fn, const ast::Call& c, const std::vector<Value>& args);
  Value call_builtin(const std::string& fn, const ast::Call& c, const std::vector<Value>& args);
  Expr unary_float(ir::Intrinsic fn, Expr x, bool python_math, SourceLoc loc);

  // ------------------------------------------------------------ lists and tuples of numbers (lower_lists.cpp)
  // The list a name holds (its locals), or a new temporary of `type`.
  ListPtr named_list(const std::string& name, SourceLoc loc);
  ListPtr temporary_list(const ListType& type, SourceLoc loc);
  // `L = value` for a list value (a literal, a copy, `[x] * n`), or a tuple
  // of numbers kept in a name (`t = (d, v)`, `t = heapq.heappop(h)`).
  void assign_list(const std::string& name, const Value& value, std::vector<Stmt>& out, SourceLoc loc);
  void assign_tuple(const std::string& name, const Value& value, std::vector<Stmt>& out, SourceLoc loc);
  // Widens the element type of the list `name` (inference), as Python lets a
  // list hold any value: ints and floats give floats (a variable's rule).
  void record_list(const std::string& name, const ListType& given, SourceLoc loc);
  // After inference: lists never given an element hold floats.
  void settle_lists();
  ListType element_type(const Value& v, SourceLoc loc);
  // v's items converted to the list's, for a store (checked conversions).
  std::vector<Expr> element_items(const ListPtr& l, const Value& v, SourceLoc loc);
  Value tuple_local(const std::string& name, SourceLoc loc);
  // A list display `[a, b]` or `[x] * n` where a list object is made.
  Value list_display(const ast::Expr& e);
  // Element k (checked: Python's IndexError) and stores; a truth test.
  Value list_element(const ListPtr& l, Expr k, SourceLoc loc);
  void store_list_element(const ListPtr& l, Expr k, const Value& v, std::vector<Stmt>& out, SourceLoc loc);
  Expr list_nonempty(const ListPtr& l, SourceLoc loc);
  // l.method(...) and heapq.fn(l, ...).
  Value call_list_method(const std::string& method, const Value& self, const ast::Call& c);
  Value call_heapq(const std::string& fn, const ast::Call& c);
  void grow_if_full(const ListPtr& l, std::vector<Stmt>& out, SourceLoc loc);
  void append_items(const ListPtr& l, const std::vector<Expr>& items, std::vector<Stmt>& out, SourceLoc loc);
  // An element held in temporaries, as a value (its items' Python types).
  Value held_element(const ListPtr& l, const std::vector<ir::Var>& held, SourceLoc loc);
  // Calls that change a list run before the statement that contains them,
  // so they must be that statement (or its whole right-hand side): then no
  // other part of it reads the list before the change.
  void check_effect_allowed(const ast::Call& c, const std::string& what);
  const ast::Call* effect_call_ = nullptr;
  // The element argument of an append or heappush, which may be such a call.
  Value effect_argument(const ast::Expr& e);
  // The arrays a returned list gives the caller (its length's worth of each).
  std::vector<ir::ArrayVar> list_result(const ListPtr& l, std::vector<Stmt>& out, SourceLoc loc);
  // `for x in L` / `for a, b in L`: Python's iteration by index, which sees
  // elements appended during the loop.
  void lower_for_list(const ast::For& f, const ListPtr& l, std::vector<Stmt>& out);
  // The condition of an if, while, `not`, `and`/`or` or conditional: a
  // number's truth, or a list's (not empty).
  Expr condition(const ast::Expr& e, const char* context);
  Expr condition_of(const Value& list, SourceLoc loc);
  // ------------------------------------------------------------ dicts and sets (lower_hash_tables.cpp,
  // lower_dicts.cpp)
  HashPtr named_table(const std::string& name, SourceLoc loc);
  void record_table(const std::string& name, const HashType& given, SourceLoc loc);
  void settle_tables();
  Expr table_slot(const HashParts& t, const Expr& key, SourceLoc loc);
  Expr next_slot(const HashParts& t, const Expr& slot, SourceLoc loc);
  // Statements setting a temporary to the live entry holding `key`, or -1.
  ir::Var find_entry(const HashParts& t, const Expr& key, std::vector<Stmt>& out, SourceLoc loc);
  void place_entry(const HashParts& t, const Expr& entry, std::vector<Stmt>& out, SourceLoc loc);
  void allocate_table(const HashParts& t, const Expr& capacity, std::vector<Stmt>& out, SourceLoc loc);
  // New, empty storage: `d = {...}` before its items, d.clear().
  void empty_table(const HashParts& t, std::vector<Stmt>& out, SourceLoc loc);
  void make_room(const HashParts& t, std::vector<Stmt>& out, SourceLoc loc);
  // d[key] = value (value null for a set's add).
  void insert_entry(const HashParts& t, const Expr& key, const Expr& value, std::vector<Stmt>& out, SourceLoc loc);
  Value table_display(const std::string& fn, const ast::Call& c);
  void assign_table(const std::string& name, const Value& value, std::vector<Stmt>& out, SourceLoc loc);
  // A dict or set key: an integer.
  Expr table_key(const Value& key, SourceLoc loc);
  Value table_lookup(const HashPtr& t, const Value& key, SourceLoc loc);
  void store_table(const HashPtr& t, const Value& key, const Value& value, std::vector<Stmt>& out, SourceLoc loc);
  Expr table_contains(const HashPtr& t, const Value& key, SourceLoc loc);
  Value call_table_method(const std::string& method, const Value& self, const ast::Call& c);
  void lower_for_table(const ast::For& f, const Value& table, std::vector<Stmt>& out);
  std::vector<ir::ArrayVar> table_result(const HashPtr& t, std::vector<Stmt>& out, SourceLoc loc);
  // ------------------------------------------------------------ sparse operator programs (lower_sparse*.cpp)
  void declare_sparse_param(const std::string& name, const SparseType& t, SourceLoc loc);
  // Whether e computes with a sparse matrix: the tensor-algebra level lowers it.
  bool involves_sparse(const ast::Expr& e) const;
  Value lower_algebra(const ast::Expr& e);
  // An operand of an operator of the algebra: an algebra value, or a dense
  // array or scalar (a matrix product of dense operands stays a statement).
  Value algebra_operand(const ast::Expr& e);
  Value algebra_call(const ast::Call& c);
  Value algebra_method(const std::string& method, const Value& self, const ast::Call& c);
  Value plait_sparse_call(const std::string& fn, const ast::Call& c);
  Value algebra_attribute(const ast::Attribute& a);
  Value algebra_binary(ast::BinOpKind op, const Value& a, const Value& b, SourceLoc loc);
  Value algebra_matmul(const Value& a, const Value& b, SourceLoc loc);
  Value algebra_elementwise(ir::BinaryOp op, const Value& sparse, const Value& other, SourceLoc loc, bool sparse_left,
                            const char* what);
  // An elementwise operation between two sparse matrices (a op b): its
  // result's pattern is merged from theirs (tensor/assemble_pattern.cpp).
  Value algebra_merge(ir::BinaryOp op, const Value& a, const Value& b, SourceLoc loc, const char* what);
  // The product of two sparse matrices (SpGEMM): its result's pattern is the
  // union of b's rows at a's stored columns (tensor/assemble_product.cpp).
  Value algebra_sparse_product(const Value& a, const Value& b, SourceLoc loc);
  // A CSR temporary whose statement makes its pattern (tensor::TensorVar::assembled).
  tensor::TensorVarPtr assembled_temp(ScalarType type, std::vector<Expr> shape, std::vector<std::string> dims,
                                      ScalarKind index, SourceLoc loc);
  Value algebra_sum(const Value& self, int axis, bool mean, SourceLoc loc);
  Value algebra_map(const Value& self, ir::Intrinsic fn, SourceLoc loc);
  // A statement with self's pattern whose values are f(self's value); it
  // runs after `before` (default: self's statements).
  Value algebra_pattern_map(const Value& self, SourceLoc loc, ScalarType type,
                            const std::function<tensor::IndexExpr(const tensor::IndexExpr&)>& f,
                            const std::vector<tensor::StatementPtr>* before = nullptr);
  Value algebra_transpose(const Value& self, SourceLoc loc);
  Value algebra_toarray(const Value& self, SourceLoc loc);
  // An axis argument: 0 or 1 (-2 and -1 counted from the end), -1 for None.
  int axis_constant(const Value& v, const std::string& fn, bool allow_none, SourceLoc loc);
  // The tensor of an operand: an algebra value's result, a dense array's, a scalar's.
  tensor::TensorVarPtr algebra_tensor(const Value& v, SourceLoc loc);
  // v's dense array, dimension by dimension broadcast to `extents` (right-aligned).
  tensor::IndexExpr broadcast_access(const tensor::TensorVarPtr& t, const std::vector<tensor::IndexVar>& vars,
                                     const std::vector<Expr>& extents, SourceLoc loc);
  tensor::IndexVar index_var(const std::string& name);
  tensor::TensorVarPtr algebra_temp(ScalarType type, tensor::Format format, std::vector<Expr> shape);
  // A temporary of `type` stored at the positions of sparse tensor s (its pattern).
  tensor::TensorVarPtr pattern_temp(ScalarType type, const tensor::TensorVar& s);
  Value with_statement(std::vector<tensor::StatementPtr> before, tensor::StatementPtr s, bool matrix, ScalarKind index);
  // A dense product under a sparse operator combined with a number
  // (`1 / (B @ C)`): a statement of its own, so that fusion computes it
  // where the operator needs it only.
  Value algebra_dense_arithmetic(ast::BinOpKind op, const Value& product, const Value& number, bool product_left,
                                 SourceLoc loc);
  // Runs an algebra value's program where the current statement is: its
  // result as an array (or a scalar), or for a sparse result an algebra
  // value over the computed values.
  Value realize(const Value& v, SourceLoc loc);
  void check_sparse_assignment(const std::string& name, SourceLoc loc);
  // A sparse value returned: its values, indices, index pointers and the
  // extent the indices count in (CSR: column indices, row pointers, columns;
  // a transpose, CSC: row indices, column pointers, rows).
  void sparse_return_values(const Value& v, std::vector<ir::ReturnValue>& out, SourceLoc loc);
  std::map<std::string, Value> sparse_values_;  // sparse parameters and locals
  // Sparse locals read inside a loop (found while inferring), with the line
  // of the first such read: computed where they are bound, once, rather than
  // fused into the loop's statements and computed again in every step.
  std::map<std::string, SourceLoc> sparse_read_in_loops_;
  // Notes a read of sparse local `id` (inside a loop, while inferring).
  void note_sparse_read(const std::string& id, SourceLoc loc) {
    if (inferring_ && loop_depth_ > 0 && !sparse_params_.count(id)) sparse_read_in_loops_.emplace(id, loc);
  }
  std::set<std::string> once_at_top_;           // locals assigned once, at the function's top level
  int algebra_counter_ = 0;
  bool associating_ = false;  // building the other association of a chain

  // ------------------------------------------------------------ array expressions (lower_array_exprs.cpp)
  bool is_array_like(const Value& v) const { return v.kind == Value::Kind::Array || v.kind == Value::Kind::Tensor; }
  TensorPtr to_tensor(const Value& v, SourceLoc loc);
  // The source text at `l` without spaces (a slice's label: ":M", "1:N-1").
  std::string source_text(SourceLoc l) const;
  TensorPtr array_view(const TensorPtr& base, const ast::Expr* index, const ast::Expr* source, SourceLoc loc,
                       const LoweredParts* lowered = nullptr);
  // ------------------------------------------------------------ gathers (lower_gathers.cpp), scatters
  TensorPtr gather_index_tensor(const Value& v, bool second, SourceLoc loc);
  TensorPtr gather(const TensorPtr& view, size_t axis, const TensorPtr& index, bool first, SourceLoc loc);
  void scatter_add(const ast::Call& c, const std::vector<Value>& args);
  Value bincount(const ast::Call& c, const std::vector<Value>& args);
  // numpy.einsum over dense operands, through the tensor-algebra level (lower_einsum.cpp).
  Value einsum(const ast::Call& c);
  bool indexes_a_view(const ir::ArrayVar& array, const ast::Expr& index);
  ir::Var broadcast_flag(const Expr& e, const Expr& broadcast, std::vector<Stmt>& out, SourceLoc loc);
  Expr named_if_large(const Expr& extent, SourceLoc loc);
  Value elementwise(const std::vector<Value>& args, const std::function<Expr(const std::vector<Expr>&)>& op, SourceLoc loc);
  Value tensor_binary(ast::BinOpKind op, const Value& a, const Value& b, SourceLoc loc);
  Value reduce(const std::string& name, const Value& x, const ast::Call& c, size_t first_kwarg_arg);
  Value reduce_axes(const std::string& name, TensorPtr t, std::vector<int> axes, bool keepdims, SourceLoc loc);
  Value matmul(const Value& a, const Value& b, SourceLoc loc);
  Value transpose(const Value& a, SourceLoc loc);
  // np.reshape, .reshape, np.ravel, .ravel and .flatten (lower_reshape.cpp).
  Value reshape(const std::string& fn, const ast::Call& c, const Value* self);
  Value call_array_method(const std::string& method, const Value& self, const ast::Call& c);
  // ------------------------------------------------------------ NumPy library functions (lower_numpy_library.cpp)
  // np.clip, np.linalg.norm, np.any/all, np.arange, np.linspace, np.cumsum,
  // np.sort, np.unique, np.concatenate, np.nonzero, np.where(c) and the
  // methods of those names (`self`: the
  // array of a method call): the value, or none when `fn` is none of them.
  std::optional<Value> numpy_library(const std::string& fn, const ast::Call& c, const Value* self);
  // The arguments of a call bound to `names` (self first), as Python binds
  // them; `aliases` maps other keyword spellings to names.
  std::vector<std::optional<Value>> library_arguments(const std::string& what, const ast::Call& c, const Value* self,
                                                      const std::vector<std::string>& names,
                                                      const std::map<std::string, std::string>& aliases);
  // The axes an axis= argument names (all for None), checked as NumPy checks them.
  std::vector<int> reduction_axes(const std::optional<Value>& axis, size_t rank, SourceLoc loc);
  // A True/False constant argument (keepdims=); absent or None: false.
  bool constant_flag(const std::optional<Value>& v, const std::string& what, SourceLoc loc);
  Value arange(const ast::Call& c);
  Value linspace(const ast::Call& c);
  Value cumsum(const ast::Call& c, const Value* self);
  // Sorting (lower_sorting.cpp). np.sort of a 1-D array: a sorted copy.
  Value sort(const ast::Call& c);
  ir::ArrayVar sorted_copy(const TensorPtr& x, SourceLoc loc);
  // np.argsort and the method, of a 1-D array: int64 positions, equal
  // values in the order of their positions.
  Value argsort(const ast::Call& c, const Value* self);
  // A new 1-D array of n elements whose accesses are all in range by
  // construction (no checks), and x copied into one.
  ir::ArrayVar sort_scratch(ScalarKind dtype, const Expr& n, SourceLoc loc);
  ir::ArrayVar copy_for_sorting(const TensorPtr& x, SourceLoc loc);
  // Sorts `items` (from sort_scratch) in place, stably, by key(item) in
  // NumPy's order (NaNs last).
  void merge_sort(const ir::ArrayVar& items, const std::function<Expr(const Expr&)>& key, SourceLoc loc);
  // np.unique of a 1-D array: its sorted distinct values (NaNs as one).
  Value unique(const ast::Call& c);
  // np.concatenate of arrays along their first axis.
  Value concatenate(const ast::Call& c);
  // np.stack of arrays of one shape along a new axis.
  Value stack(const ast::Call& c);
  Value nonzero(const Value& a, SourceLoc loc);
  bool call_numpy_array(const std::string& fn, const ast::Call& c, const std::vector<Value>& args, Value* out);
  ir::ArrayVar materialize(const TensorPtr& t, std::vector<Stmt>& out, SourceLoc loc, const ast::Stmt* stmt);
  void assign_tensor(const TensorPtr& target, const TensorPtr& value, std::vector<Stmt>& out, SourceLoc loc,
                     const ast::Stmt* stmt);
  std::vector<Stmt> build_nest(const std::vector<LoopDim>& dims, Sink& inner, std::vector<Stmt> innermost, Sink& outer);
  // Sliced-index pragmas of the statement being lowered: dimension label ->
  // properties (`#pragma :M=>parallel :N=>reduce(sum)`).
  // One property of a sliced-pragma entry: its name, the text between its
  // parentheses ("" without them) and, for block(N) and le(N), N (checked
  // and parsed by check_property_argument).
  struct SlicedProperty {
    std::string word;
    std::string argument;
    int size = 0;
  };
  struct SlicedPragma {
    std::vector<SlicedProperty> props;
    SourceLoc loc;
    bool used = false;
  };
  std::map<std::string, SlicedPragma> sliced_pragmas_;
  bool statement_sequential_ = false;
  // Dimensions of extent 1 known at compile time: by local name (gathered
  // while inferring: a dimension counts only if every assignment agrees) and
  // by array (temporaries and locals, while emitting).
  std::map<std::string, std::vector<bool>> local_units_;
  // Keyed by the array itself (not its address): the map keeps the arrays
  // of the inference phase alive, so an address is never reused for another.
  std::map<ir::ArrayVar, std::vector<bool>> array_units_;
  void record_units(const std::string& name, const std::vector<bool>& units);
  void parse_statement_pragmas(const ast::Stmt& stmt);
  int check_property_argument(const std::string& word, const std::optional<std::string>& argument, SourceLoc loc) const;
  ir::LoopSchedule apply_sliced_pragma(const LoopDim& dim, ir::LoopSchedule sched, const std::string& reduce_name);
  void check_sliced_pragmas_used();
  Expr placeholder(ScalarType t);
  const ast::Stmt* current_stmt_ = nullptr;  // the statement being lowered (for its pragmas)
  std::vector<ir::Remark> function_remarks_;  // for kernel.explain()
  bool schedule_pragma_used_ = false;
  // Names bound to plait.vidx(...): a subscript by that name is the call.
  std::map<std::string, const ast::Call*> vidx_aliases_;
  // Arrays written through a subscript or updated in place somewhere in the
  // function (a view bound to a name would have to see those writes).
  std::set<std::string> written_arrays_;          // the current statement built a loop nest that read its pragmas
  // Array locals ever bound to a parameter or to another such local
  // (gathered while inferring): they may share memory with an argument.
  std::set<std::string> argument_aliases_;
  // Whether an array may share memory with an argument (a parameter, or a
  // local in argument_aliases_): such arrays may be views of one buffer, so
  // an array statement between two of them is versioned on a run-time test.
  bool may_alias_argument(const ir::ArrayInfo* a) const;

  ir::ArrayVar temp_array(const ArrayType& t, SourceLoc loc) {
    auto a = std::make_shared<ir::ArrayInfo>();
    a->name = "_tmp_array" + std::to_string(temp_counter_++);
    a->type = t;
    a->loc = loc;
    return a;
  }
  ir::Var temp_var(ScalarType t, SourceLoc loc) {
    auto v = std::make_shared<ir::VarInfo>();
    v->name = "_tmp" + std::to_string(temp_counter_++);
    v->type = t;
    v->loc = loc;
    return v;
  }

  const SourceFile& file_;
  const Signature& signature_;
  const Globals& globals_;
  const CompileOptions& options_;

  bool inferring_ = true;
  bool changed_ = false;
  std::set<std::string> assigned_names_;
  std::set<std::string> param_names_;
  std::map<std::string, LocalType> types_;  // inferred so far
  std::map<std::string, Local> locals_;     // emission phase
  std::optional<std::vector<ValueType>> results_;
  bool returns_tuple_ = false;
  bool returns_list_ = false;
  SourceLoc first_return_loc_;
  int loop_depth_ = 0;
  // Loops around the statement marked parallel or simd: their iterations
  // promise independence, and array statements between arguments inside
  // them are not versioned on an overlap test (docs/language.md).
  int parallel_depth_ = 0;
  int temp_counter_ = 0;
  // Statements an expression needs before the statement that contains it
  // (array allocations, checks of possibly unassigned locals), flushed by
  // lower_stmt.
  std::vector<Stmt> pending_;
  Bindings bindings_;
  std::map<std::string, ir::Var> bound_flags_;
  std::set<const ast::Name*> checked_reads_;
  // The conditions under which the operand being lowered is evaluated: the
  // operands before it in `and`/`or` and comparison chains, the test of a
  // conditional expression.
  std::vector<Expr> guards_;
  std::map<std::string, std::vector<ir::Param>> sparse_params_;  // a sparse parameter's arrays and extent
};

}  // namespace plait::lowering
