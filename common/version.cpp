// The library version, baked in by CMake (FF_VERSION_STRING on ff_common).
#include "common/version.h"

#ifndef FF_VERSION_STRING
#error "FF_VERSION_STRING must be defined by the build"
#endif

namespace ff {

const char* library_version() {
  return FF_VERSION_STRING;
}

}  // namespace ff
