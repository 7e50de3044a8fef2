// How values combine: the operator of reductions, scatter-reductions, block reductions and the
// collectives of ff::dist. Persisted in recordings: never renumber.
#pragma once

#include <cstdint>

namespace ff {

/// Add and Mul wrap for integers; Min and Max compare by signedness (floats: a NaN is ignored
/// where another value exists); And and Or are bitwise, for integers (and Bool in reductions).
enum class ReduceOp : uint8_t { Add = 0, Mul = 1, Min = 2, Max = 3, And = 4, Or = 5 };

/// "add", "mul", "min", "max", "and", "or"; "invalid-reduce-op" for other values.
const char* to_string(ReduceOp op);

}  // namespace ff
