// PTX target policy, registers and immediates.
#include "backend/cuda/ptx_writer.h"

#include <bit>

namespace ff::cuda_backend {

unsigned ptx_version_for(const PtxTarget& target) {
  if (target.version)
    return target.version;
  unsigned v = 64;  // CUDA 10.1: the floor of the policy
  if (target.sm >= 80)
    v = 70;
  if (target.sm >= 86)
    v = 71;
  if (target.sm >= 89)
    v = 78;
  if (target.sm >= 100)
    v = 86;
  if (target.sm >= 120)
    v = 87;
  return v;
}

std::string ptx_module_header(const PtxTarget& target) {
  unsigned v = ptx_version_for(target);
  return fmt::format(".version {}.{}\n.target sm_{}\n.address_size 64\n\n", v / 10, v % 10,
                     target.sm);
}

RegClass reg_class(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
      return RegClass::Pred;
    case ScalarType::Int32:
    case ScalarType::UInt32:
      return RegClass::B32;
    case ScalarType::Int64:
    case ScalarType::UInt64:
      return RegClass::B64;
    case ScalarType::Float32:
      return RegClass::F32;
    case ScalarType::Float64:
      return RegClass::F64;
  }
  return RegClass::B32;
}

const char* mov_type(RegClass c) {
  static const char* const type[] = {"pred", "b32", "b64", "f32", "f64"};
  return type[static_cast<unsigned>(c)];
}

std::string PtxWriter::reg(RegClass c) {
  static const char* const prefix[] = {"%p", "%r", "%rd", "%f", "%fd"};
  auto i = static_cast<unsigned>(c);
  return prefix[i] + std::to_string(n_[i]++);
}

std::string PtxWriter::declarations() const {
  static const char* const decl[] = {".pred %p", ".b32 %r", ".b64 %rd", ".f32 %f", ".f64 %fd"};
  std::string s;
  for (unsigned i = 0; i < 5; ++i)
    if (n_[i])
      s += fmt::format("\t.reg {}<{}>;\n", decl[i], n_[i]);
  return s;
}

std::string ptx_f32_bits(uint32_t bits) {
  return fmt::format("0f{:08X}", bits);
}

std::string ptx_f64_bits(uint64_t bits) {
  return fmt::format("0d{:016X}", bits);
}

std::string ptx_f32(float v) {
  return ptx_f32_bits(std::bit_cast<uint32_t>(v));
}

std::string ptx_f64(double v) {
  return ptx_f64_bits(std::bit_cast<uint64_t>(v));
}

}  // namespace ff::cuda_backend
