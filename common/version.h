// The library's version, as written into recording files, disk-cache keys and tool banners.
#pragma once

namespace ff {

/// "major.minor.patch" of this build (CMake's PROJECT_VERSION).
const char* library_version();

}  // namespace ff
