// This thread's region names (region_names.h).
#include "backend/region_names.h"

namespace ff {

namespace {

thread_local const RegionNames* t_names = nullptr;

}  // namespace

RegionNamesScope::RegionNamesScope(const RegionNames* names) : outer_(t_names) {
  t_names = names;
}

RegionNamesScope::~RegionNamesScope() {
  t_names = outer_;
}

const RegionNames* current_region_names() {
  return t_names;
}

}  // namespace ff
