// ff::Size: arithmetic that builds provenance expressions; comparisons that record guards.
#include <algorithm>

#include "common/log.h"
#include "freezeframe/errors.h"
#include "tracer/device.h"
#include "tracer/variable.h"

namespace ff {
namespace detail {

SizeExprPtr size_leaf(const std::shared_ptr<Buffer>& buffer) {
  auto n = std::make_shared<SizeExprNode>();
  n->op = SizeOp::BufferSize;
  n->value = buffer->size;
  n->buffer = buffer;
  return n;
}

Size dist_size_leaf(bool count, uint64_t value) {
  auto n = std::make_shared<SizeExprNode>();
  n->op = count ? SizeOp::Ranks : SizeOp::Rank;
  n->value = value;
  return Size(SizeExprPtr(std::move(n)));
}

bool same_expr(const SizeExprNode* a, const SizeExprNode* b) {
  if (a == b)
    return true;
  if (!a || !b || a->op != b->op || a->value != b->value)
    return false;
  if (a->op == SizeOp::BufferSize)
    return a->buffer == b->buffer;
  if (is_leaf(a->op))
    return true;  // a constant, the rank or the rank count: equal values
  return same_expr(a->lhs.get(), b->lhs.get()) && same_expr(a->rhs.get(), b->rhs.get());
}

void flatten(const SizeExprNode* e, uint64_t value, std::vector<SizeNode>& out) {
  if (!e) {
    out.push_back({SizeOp::Const, value, nullptr});
    return;
  }
  switch (e->op) {
    case SizeOp::Const:
      out.push_back({SizeOp::Const, e->value, nullptr});
      break;
    case SizeOp::BufferSize:
      out.push_back({SizeOp::BufferSize, e->value, e->buffer->ptr});
      break;
    case SizeOp::Rank:
    case SizeOp::Ranks:
      out.push_back({e->op, e->value, nullptr});
      break;
    default:
      flatten(e->lhs.get(), e->lhs ? e->lhs->value : 0, out);
      flatten(e->rhs.get(), e->rhs ? e->rhs->value : 0, out);
      out.push_back({e->op, 0, nullptr});
  }
}

namespace {

SizeExprPtr const_node(uint64_t v) {
  auto n = std::make_shared<SizeExprNode>();
  n->op = SizeOp::Const;
  n->value = v;
  return n;
}

Size combine(SizeOp op, const Size& a, const Size& b, uint64_t value) {
  if (!a.has_provenance() && !b.has_provenance())
    return Size(value);
  auto n = std::make_shared<SizeExprNode>();
  n->op = op;
  n->value = value;
  n->lhs = a.expr() ? a.expr() : const_node(raw_value(a));
  n->rhs = b.expr() ? b.expr() : const_node(raw_value(b));
  return Size(SizeExprPtr(std::move(n)));
}

/// Evaluates `a cmp b` and reports the decision to the backend (the recorder keeps it as a
/// guard) whenever one side carries provenance. Both sides are real expressions: a side
/// without provenance is its constant.
bool compare(SizeCmp cmp, const Size& a, const Size& b, const char* what,
             const char* subject = nullptr) {
  uint64_t x = raw_value(a), y = raw_value(b);
  bool outcome = ff::compare(cmp, x, y);
  if (a.has_provenance() || b.has_provenance()) {
    TracerState& s = state();
    Window w;
    std::vector<SizeNode>& lhs = s.scratch.guard_lhs;
    std::vector<SizeNode>& rhs = s.scratch.guard_rhs;
    lhs.clear();
    rhs.clear();
    flatten(a.expr().get(), x, lhs);
    flatten(b.expr().get(), y, rhs);
    SizeGuard g{cmp, lhs, rhs, x, y, what, subject};
    current_device()->backend().guard(g, outcome);
  }
  return outcome;
}

[[noreturn]] void overflow(const char* op, const Size& a, const Size& b) {
  throw Error("size arithmetic: " + a.to_string() + " " + op + " " + b.to_string() + " = " +
              std::to_string(raw_value(a)) + " " + op + " " + std::to_string(raw_value(b)) +
              " overflows 64 bits");
}

/// The value of a size converted to a plain integer. Inside a recording the provenance is
/// lost there, so the recording is pinned to the value: a guard `expr == value` that fails
/// at any replay where the expression comes out differently.
uint64_t pin(const Size& s) {
  uint64_t v = raw_value(s);
  if (!s.has_provenance() || !recording_open())
    return v;
  SizeOp root = s.expr()->op;
  if (root == SizeOp::Rank || root == SizeOp::Ranks) {
    // ff::dist::rank() or size() read as an int: the recording belongs to this rank (or rank
    // count), as if it were part of the key.
    bool count = root == SizeOp::Ranks;
    compare(SizeCmp::Eq, s, Size(v),
            count ? "ff::dist::size() read as an int" : "ff::dist::rank() read as an int");
    logging::tracer().info(
        "ff::dist::{}() = {} was read as an int inside a recording: it replays only where it "
        "is {} (elsewhere ff::GuardError, and a frozen function records anew); "
        "ff::dist::{}_expr() keeps it an expression that replays on every rank",
        count ? "size" : "rank", v, v, count ? "size" : "rank");
    return v;
  }
  std::string expr = s.to_string();
  compare(SizeCmp::Eq, s, Size(v), "a size converted to a plain integer");
  logging::tracer().warn(
      "the size {} = {} was converted to a plain integer inside a recording, which loses "
      "its provenance: the recording is pinned to {} = {} (a replay where it differs raises "
      "ff::GuardError, and a frozen function records that size anew); keep it an ff::Size "
      "to replay at other sizes",
      expr, v, expr, v);
  return v;
}

}  // namespace

void guard_sizes(const Size& a, const Size& b, const char* what, const char* subject) {
  compare(SizeCmp::Eq, a, b, what, subject);
}

uint64_t raw_value(const Size& s) {
  return s.value_;
}

bool var_empty_check(Handle v) {
  return compare(SizeCmp::Eq, var_width(v), Size(0), "empty()");
}

}  // namespace detail

Size::Size(std::shared_ptr<const detail::SizeExprNode> expr)
    : value_(expr ? expr->value : 0), expr_(std::move(expr)) {
  if (expr_ && expr_->op == SizeOp::Const)
    expr_.reset();  // a constant carries no provenance
}

bool Size::has_provenance() const {
  return expr_ != nullptr;
}

uint64_t Size::value() const {
  return detail::pin(*this);
}

Size::operator size_t() const {
  return detail::pin(*this);
}

std::string Size::to_string() const {
  std::vector<SizeNode> nodes;
  detail::flatten(expr_.get(), value_, nodes);
  // Buffers are named as a recording knows them ("input 0"), else by what they hold ("an
  // array of 5 float32"), never by their address (Backend::describe_buffer's fallback).
  Backend& backend = detail::current_device()->backend();
  std::vector<const detail::Buffer*> buffers;
  auto collect = [&](auto& self, const detail::SizeExprNode* e) -> void {
    if (!e)
      return;
    if (e->buffer)
      buffers.push_back(e->buffer.get());
    self(self, e->lhs.get());
    self(self, e->rhs.get());
  };
  collect(collect, expr_.get());
  return ff::to_string(SizeProv(nodes), [&](const void* p) -> std::string {
    std::string known = backend.describe_buffer(p);
    if (known != Backend::address_of(p))
      return known;
    for (const detail::Buffer* b : buffers)
      if (b->ptr == p)
        return "an array of " + std::to_string(b->size) + " " + ff::to_string(b->type);
    return "an array";
  });
}

Size operator+(const Size& a, const Size& b) {
  uint64_t x = detail::raw_value(a), y = detail::raw_value(b);
  if (x + y < x)
    detail::overflow("+", a, b);
  return detail::combine(SizeOp::Add, a, b, x + y);
}

Size operator-(const Size& a, const Size& b) {
  uint64_t x = detail::raw_value(a), y = detail::raw_value(b);
  if (y > x)
    throw Error("size arithmetic: " + a.to_string() + " - " + b.to_string() + " = " +
                std::to_string(x) + " - " + std::to_string(y) + " would be negative");
  return detail::combine(SizeOp::Sub, a, b, x - y);
}

Size operator*(const Size& a, const Size& b) {
  uint64_t x = detail::raw_value(a), y = detail::raw_value(b);
  if (x != 0 && y > UINT64_MAX / x)
    detail::overflow("*", a, b);
  return detail::combine(SizeOp::Mul, a, b, x * y);
}

Size operator/(const Size& a, const Size& b) {
  uint64_t x = detail::raw_value(a), y = detail::raw_value(b);
  if (y == 0)
    throw Error("size arithmetic: division of " + a.to_string() + " by zero (" + b.to_string() +
                ")");
  return detail::combine(SizeOp::Div, a, b, x / y);
}

Size min(const Size& a, const Size& b) {
  return detail::combine(SizeOp::Min, a, b, std::min(detail::raw_value(a), detail::raw_value(b)));
}

Size max(const Size& a, const Size& b) {
  return detail::combine(SizeOp::Max, a, b, std::max(detail::raw_value(a), detail::raw_value(b)));
}

bool operator==(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Eq, a, b, "user size comparison ==");
}

bool operator!=(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Ne, a, b, "user size comparison !=");
}

bool operator<(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Lt, a, b, "user size comparison <");
}

bool operator<=(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Le, a, b, "user size comparison <=");
}

bool operator>(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Gt, a, b, "user size comparison >");
}

bool operator>=(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Ge, a, b, "user size comparison >=");
}

}  // namespace ff
