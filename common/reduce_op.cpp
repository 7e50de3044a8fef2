// The names of ff::ReduceOp (include/freezeframe/reduce_op.h), for messages and dumps: here,
// in the lowest layer, so that backends, the recorder and the tools share one table.
#include "freezeframe/reduce_op.h"

namespace ff {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Add:
      return "add";
    case ReduceOp::Mul:
      return "mul";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::And:
      return "and";
    case ReduceOp::Or:
      return "or";
  }
  return "invalid-reduce-op";
}

namespace detail {
void reduce_op_and_or_need_integer_elements() {}  // only named in compile-time checks
}  // namespace detail

}  // namespace ff
