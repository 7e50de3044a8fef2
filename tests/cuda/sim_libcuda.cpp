// libff_cuda_sim.so: the simulated driver (fake_driver.h) behind the real driver's exported
// names, so an unmodified program finds it through dlopen: FF_CUDA_DRIVER_LIBRARY=<this .so>
// runs ff_tests_cuda, ff_cuda_bench or tests/gpu/run.sh end to end on the PTX interpreter.
#include "backend/cuda/cuda_api.h"
#include "cuda/fake_driver.h"

using namespace ff::cuda_backend;

// Names for the parameters of an X-macro entry (types only there): a1, a2, ...
#define FF_SIM_N(...) FF_SIM_N_(__VA_ARGS__, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define FF_SIM_N_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, N, ...) N
#define FF_SIM_CAT(a, b) FF_SIM_CAT_(a, b)
#define FF_SIM_CAT_(a, b) a##b
#define FF_SIM_DECL(...) FF_SIM_CAT(FF_SIM_DECL_, FF_SIM_N(__VA_ARGS__))(__VA_ARGS__)
#define FF_SIM_ARGS(...) FF_SIM_CAT(FF_SIM_ARGS_, FF_SIM_N(__VA_ARGS__))
#define FF_SIM_DECL_1(t1) t1 a1
#define FF_SIM_DECL_2(t1, t2) t1 a1, t2 a2
#define FF_SIM_DECL_3(t1, t2, t3) t1 a1, t2 a2, t3 a3
#define FF_SIM_DECL_4(t1, t2, t3, t4) t1 a1, t2 a2, t3 a3, t4 a4
#define FF_SIM_DECL_5(t1, t2, t3, t4, t5) t1 a1, t2 a2, t3 a3, t4 a4, t5 a5
#define FF_SIM_DECL_6(t1, t2, t3, t4, t5, t6) t1 a1, t2 a2, t3 a3, t4 a4, t5 a5, t6 a6
#define FF_SIM_DECL_7(t1, t2, t3, t4, t5, t6, t7) t1 a1, t2 a2, t3 a3, t4 a4, t5 a5, t6 a6, t7 a7
#define FF_SIM_DECL_8(t1, t2, t3, t4, t5, t6, t7, t8) \
  t1 a1, t2 a2, t3 a3, t4 a4, t5 a5, t6 a6, t7 a7, t8 a8
#define FF_SIM_DECL_9(t1, t2, t3, t4, t5, t6, t7, t8, t9) \
  t1 a1, t2 a2, t3 a3, t4 a4, t5 a5, t6 a6, t7 a7, t8 a8, t9 a9
#define FF_SIM_DECL_10(t1, t2, t3, t4, t5, t6, t7, t8, t9, t10) \
  t1 a1, t2 a2, t3 a3, t4 a4, t5 a5, t6 a6, t7 a7, t8 a8, t9 a9, t10 a10
#define FF_SIM_DECL_11(t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11) \
  t1 a1, t2 a2, t3 a3, t4 a4, t5 a5, t6 a6, t7 a7, t8 a8, t9 a9, t10 a10, t11 a11
#define FF_SIM_ARGS_1 a1
#define FF_SIM_ARGS_2 a1, a2
#define FF_SIM_ARGS_3 a1, a2, a3
#define FF_SIM_ARGS_4 a1, a2, a3, a4
#define FF_SIM_ARGS_5 a1, a2, a3, a4, a5
#define FF_SIM_ARGS_6 a1, a2, a3, a4, a5, a6
#define FF_SIM_ARGS_7 a1, a2, a3, a4, a5, a6, a7
#define FF_SIM_ARGS_8 a1, a2, a3, a4, a5, a6, a7, a8
#define FF_SIM_ARGS_9 a1, a2, a3, a4, a5, a6, a7, a8, a9
#define FF_SIM_ARGS_10 a1, a2, a3, a4, a5, a6, a7, a8, a9, a10
#define FF_SIM_ARGS_11 a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11

#define FF_CUDA_FN(member, required, symbol, fallback, ...)            \
  extern "C" __attribute__((visibility("default")))                    \
  CUresult ff_sim_##member(FF_SIM_DECL(__VA_ARGS__)) __asm__(symbol);  \
  extern "C" CUresult ff_sim_##member(FF_SIM_DECL(__VA_ARGS__)) {      \
    return ffcuda::fake_driver_api().member(FF_SIM_ARGS(__VA_ARGS__)); \
  }
#include "backend/cuda/cuda_symbols.inc"
#undef FF_CUDA_FN
