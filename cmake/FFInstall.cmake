# Installs the freezeframe shared library and its public headers, and exports the CMake
# package so that `find_package(freezeframe)` gives users `freezeframe::freezeframe`.
#
# Only public usage requirements reach the export: the headers (include/) and Threads. The
# library's PRIVATE dependencies (spdlog, xxHash, LLVM) are linked into the shared object
# and found at run time by its DT_NEEDED entries, so the package config does not re-find
# them.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FF_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/freezeframe"
    CACHE STRING "Where to install freezeframe's CMake package files (relative to the prefix)")

# LLVM 16 lives outside the default linker path (/usr/lib/llvm-16/lib): keep the
# directories we linked from in the installed library's RUNPATH so it loads from anywhere.
set_target_properties(freezeframe PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS freezeframe
  EXPORT freezeframeTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    COMPONENT freezeframe_Runtime
    NAMELINK_COMPONENT freezeframe_Development
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT freezeframe_Development
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT freezeframe_Runtime)

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/freezeframe"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  COMPONENT freezeframe_Development
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp" PATTERN "*.inl")

install(EXPORT freezeframeTargets
  NAMESPACE freezeframe::
  FILE freezeframeTargets.cmake
  DESTINATION "${FF_INSTALL_CMAKEDIR}"
  COMPONENT freezeframe_Development)

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/freezeframeConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/freezeframeConfig.cmake"
  INSTALL_DESTINATION "${FF_INSTALL_CMAKEDIR}")
# 0.x releases: only the same minor version is compatible.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/freezeframeConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/freezeframeConfig.cmake"
  "${PROJECT_BINARY_DIR}/freezeframeConfigVersion.cmake"
  DESTINATION "${FF_INSTALL_CMAKEDIR}"
  COMPONENT freezeframe_Development)
