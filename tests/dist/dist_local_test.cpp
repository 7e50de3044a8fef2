// ff::dist in one process without mpirun: what a program sees before init(), or in a build
// without MPI. (The collectives themselves run under mpirun: dist_test.cpp.)
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <cstdlib>

TEST_CASE("dist: before init, or without MPI, every call raises a named ff::Error") {
  CHECK_FALSE(ff::dist::initialized());
#if FF_HAS_MPI
  const char* why = "ff::dist::init() has not been called";
#else
  const char* why = "built without MPI";
#endif
  CHECK_THROWS_WITH(ff::dist::rank(), Catch::Contains("ff::dist::rank") && Catch::Contains(why));
  CHECK_THROWS_WITH(ff::dist::size(), Catch::Contains(why));
  ff::Float x = ff::Float::from({1.f, 2.f});
  CHECK_THROWS_WITH(ff::dist::all_reduce(x, ff::ReduceOp::Add),
                    Catch::Contains("all_reduce") && Catch::Contains(why));
  CHECK_THROWS_WITH(ff::dist::all_gather(x), Catch::Contains("all_gather"));
  CHECK_THROWS_WITH(ff::dist::broadcast(x, 0), Catch::Contains("broadcast"));
  CHECK_THROWS_WITH(ff::dist::sendrecv(x, 0, 0), Catch::Contains("sendrecv"));
  ff::dist::finalize();  // without init: nothing to do, no error
  // Arrays still work after the failed calls.
  CHECK((x * 2.f).to_vector() == std::vector<float>{2.f, 4.f});
}

#if FF_HAS_MPI
TEST_CASE("dist: a bad FF_DIST_CUDA_AWARE is refused by init before MPI starts") {
  ::setenv("FF_DIST_CUDA_AWARE", "maybe", 1);
  int argc = 0;
  char** argv = nullptr;
  CHECK_THROWS_WITH(ff::dist::init(argc, argv),
                    Catch::Contains("FF_DIST_CUDA_AWARE='maybe'") && Catch::Contains("auto"));
  ::unsetenv("FF_DIST_CUDA_AWARE");
  CHECK_FALSE(ff::dist::initialized());
}
#endif
