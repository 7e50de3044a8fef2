// The tracer's representation of size provenance: an immutable shared expression tree.
#pragma once

#include <memory>
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
/// Appends `e` in postfix order (a null `e` appends Const(value)).
void flatten(const SizeExprNode* e, uint64_t value, std::vector<SizeNode>& out);

}  // namespace ff::detail
