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

bool same_expr(const SizeExprNode* a, const SizeExprNode* b) {
  if (a == b)
    return true;
  if (!a || !b || a->op != b->op || a->value != b->value)
    return false;
  if (a->op == SizeOp::BufferSize)
    return a->buffer == b->buffer;
  if (a->op == SizeOp::Const)
    return true;
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
  n->lhs = a.expr() ? a.expr() : const_node(a.value());
  n->rhs = b.expr() ? b.expr() : const_node(b.value());
  return Size(SizeExprPtr(std::move(n)));
}

bool compare(SizeCmp cmp, const Size& a, const Size& b, const char* what) {
  uint64_t x = a.value(), y = b.value();
  bool outcome = ff::compare(cmp, x, y);
  if (a.has_provenance() || b.has_provenance()) {
    std::vector<SizeNode>& lhs = state().scratch.guard_lhs;
    std::vector<SizeNode>& rhs = state().scratch.guard_rhs;
    lhs.clear();
    rhs.clear();
    flatten(a.expr().get(), x, lhs);
    flatten(b.expr().get(), y, rhs);
    SizeGuard g{cmp, lhs, rhs, x, y, what};
    current_device()->backend().guard(g, outcome);
  }
  return outcome;
}

}  // namespace
}  // namespace detail

Size::Size(std::shared_ptr<const detail::SizeExprNode> expr)
    : value_(expr ? expr->value : 0), expr_(std::move(expr)) {
  if (expr_ && expr_->op == SizeOp::Const)
    expr_.reset();  // a constant carries no provenance
}

bool Size::has_provenance() const {
  return expr_ != nullptr;
}

Size::operator size_t() const {
  if (expr_ && detail::recording_open())
    logging::tracer().warn(
        "the size {} = {} was converted to a plain integer inside a recording: "
        "its provenance is lost and it replays as the constant {} (keep it an "
        "ff::Size to replay at other sizes)",
        to_string(), value_, value_);
  return value_;
}

std::string Size::to_string() const {
  std::vector<SizeNode> nodes;
  detail::flatten(expr_.get(), value_, nodes);
  Backend& backend = detail::current_device()->backend();
  return ff::to_string(SizeProv(nodes), [&](const void* p) { return backend.describe_buffer(p); });
}

Size operator+(const Size& a, const Size& b) {
  return detail::combine(SizeOp::Add, a, b, a.value() + b.value());
}

Size operator-(const Size& a, const Size& b) {
  if (b.value() > a.value())
    throw Error("size arithmetic: " + a.to_string() + " - " + b.to_string() + " = " +
                std::to_string(a.value()) + " - " + std::to_string(b.value()) +
                " would be negative");
  return detail::combine(SizeOp::Sub, a, b, a.value() - b.value());
}

Size operator*(const Size& a, const Size& b) {
  return detail::combine(SizeOp::Mul, a, b, a.value() * b.value());
}

Size operator/(const Size& a, const Size& b) {
  if (b.value() == 0)
    throw Error("size arithmetic: division of " + a.to_string() + " by zero (" + b.to_string() +
                ")");
  return detail::combine(SizeOp::Div, a, b, a.value() / b.value());
}

Size min(const Size& a, const Size& b) {
  return detail::combine(SizeOp::Min, a, b, std::min(a.value(), b.value()));
}

Size max(const Size& a, const Size& b) {
  return detail::combine(SizeOp::Max, a, b, std::max(a.value(), b.value()));
}

bool operator==(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Eq, a, b, "size comparison ==");
}

bool operator!=(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Ne, a, b, "size comparison !=");
}

bool operator<(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Lt, a, b, "size comparison <");
}

bool operator<=(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Le, a, b, "size comparison <=");
}

bool operator>(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Gt, a, b, "size comparison >");
}

bool operator>=(const Size& a, const Size& b) {
  return detail::compare(SizeCmp::Ge, a, b, "size comparison >=");
}

}  // namespace ff
