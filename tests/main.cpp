// Test runner: logging from FF_LOG_LEVEL (default warn), then Catch2.
#define CATCH_CONFIG_RUNNER
#include <freezeframe/freezeframe.h>

#include <catch2/catch.hpp>

int main(int argc, char* argv[]) {
  ff::set_log_level(ff::LogLevel::Warn);
  return Catch::Session().run(argc, argv);
}
