// Small helpers the backend tests share: how host arrays hold each element type, a value's bit
// pattern as a kernel argument, and the simplest kernel (a copy).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/ir/kernel_ir.h"
#include "freezeframe/scalar_type.h"

namespace ff_test {

using Bool8 = uint8_t;  // how Bool arrays look on the host

/// The element type of host values of type T (Bool8: Bool).
template <class T>
constexpr ff::ScalarType type_of() {
  if constexpr (std::is_same_v<T, Bool8>)
    return ff::ScalarType::Bool;
  else
    return ff::scalar_type_of<T>;
}

/// A value's bit pattern, zero-extended to 64 bits (a scalar kernel argument).
template <class T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

/// out[i] = in[i] for elements of type t.
inline ff::KernelIR copy_kernel(ff::ScalarType t) {
  ff::KernelIR ir;
  ir.params = {{ff::ParamKind::BufferIn, t}, {ff::ParamKind::BufferOut, t}};
  ir.emit(ff::IrOp::Store, t, {1, ir.emit(ff::IrOp::Load, t, {0})});
  ir.finalize();
  return ir;
}

}  // namespace ff_test
