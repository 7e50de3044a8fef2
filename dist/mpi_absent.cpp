// ff::dist in a build without MPI (find_package(MPI) found none): the program still links,
// and every use says how to get MPI.
#include <string>

#include "dist/mpi_world.h"
#include "freezeframe/errors.h"

namespace ff::dist_impl {
namespace {

[[noreturn]] void no_mpi(const char* what) {
  throw Error(std::string("ff::dist::") + what +
              ": freezeframe was built without MPI (install libopenmpi-dev and openmpi-bin, "
              "e.g. with scripts/install-deps.sh, and configure again)");
}

}  // namespace

void init(int*, char***, std::optional<bool>) {
  no_mpi("init");
}

void finalize() noexcept {}

void abort_all(const std::string&) noexcept {}

bool initialized() {
  return false;
}

bool takes_device_pointers() {
  return false;
}

int rank(const char* what) {
  no_mpi(what);
}

int size(const char* what) {
  no_mpi(what);
}

size_t exchange_count(const Collective& c) {
  no_mpi(to_string(c.kind));
}

Agreement agree(Outcome) {
  no_mpi("agreement");
}

void run(const Collective& c) {
  no_mpi(to_string(c.kind));
}

}  // namespace ff::dist_impl
