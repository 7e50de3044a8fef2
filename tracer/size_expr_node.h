// The tracer's representation of size provenance: an immutable shared expression tree.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/ir/size_expr.h"
#include "freezeframe/size.h"

namespace ff::detail {

struct Buffer;

/// One node of a size expression. Leaves are constants or the logical size of a buffer
/// (held alive by the node, so its pointer cannot be reused while the expression exists).
struct SizeExprNode {
  SizeOp op = SizeOp::Const;
  uint64_t value = 0;  // the value while tracing (Const: the constant)
  std::shared_ptr<Buffer> buffer;
  std::shared_ptr<const SizeExprNode> lhs, rhs;
};

using SizeExprPtr = std::shared_ptr<const SizeExprNode>;

/// A leaf for the logical size of `buffer`.
SizeExprPtr size_leaf(const std::shared_ptr<Buffer>& buffer);
/// Structural equality (same constants, same buffers, same shape).
bool same_expr(const SizeExprNode* a, const SizeExprNode* b);
/// Records the size decision `a == b` (which held) as a guard named `what`: the user did not
/// compare anything, the tracer decided (equal operand sizes, a broadcast, a fusion).
/// `what` and `subject` are static strings (the message is "what subject").
void guard_sizes(const Size& a, const Size& b, const char* what, const char* subject = nullptr);

/// The value of `s` without pinning it (ff::Size::value() pins inside a recording): for the
/// tracer's own bookkeeping, which keeps the provenance alongside.
uint64_t raw_value(const Size& s);

/// Appends `e` in postfix order (a null `e` appends Const(value)).
void flatten(const SizeExprNode* e, uint64_t value, std::vector<SizeNode>& out);

}  // namespace ff::detail
