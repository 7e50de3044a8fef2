// ff::dist's process-level calls: they hand over to dist/, the one module that calls MPI.
#include "freezeframe/dist.h"

#include "dist/mpi_world.h"

namespace ff::dist {

void init(int& argc, char**& argv) {
  dist_impl::init(&argc, &argv);
}

void init() {
  dist_impl::init(nullptr, nullptr);
}

void finalize() {
  dist_impl::finalize();
}

bool initialized() {
  return dist_impl::initialized();
}

int rank() {
  return dist_impl::rank();
}

int size() {
  return dist_impl::size();
}

namespace detail {
void refuse_gradient(const char* what) {
  throw Error(std::string("ff::dist::") + what +
              ": collectives have no gradient rules yet, and this array has a gradient (pass "
              "ff::detach(x))");
}
}  // namespace detail

}  // namespace ff::dist
