// Test runner: logging from FF_LOG_LEVEL (default warn), the on-disk kernel cache off unless
// FF_CACHE_DIR says otherwise (tests must not depend on what earlier runs left there), then
// Catch2.
#define CATCH_CONFIG_RUNNER
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char* argv[]) {
  ::setenv("FF_CACHE_DIR", "off", /*overwrite=*/0);
  ff::set_log_level(ff::LogLevel::Warn);
  return Catch::Session().run(argc, argv);
}
