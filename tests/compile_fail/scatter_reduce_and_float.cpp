// Must not compile: And and Or combine bits, which float elements do not offer. The test
// (tests/CMakeLists.txt, "scatter.compile error for scatter_reduce And on floats") checks that
// the compiler stops with ff::ReduceOpFor's check, whose message names it.
#include "freezeframe/array.h"

int main() {
  ff::Float target = ff::zeros<ff::Float>(4);
  ff::scatter_reduce(ff::ReduceOp::And, target, 1.f, ff::UInt32(0u));
}
