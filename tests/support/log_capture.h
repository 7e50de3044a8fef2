// Captures what a logger writes while it lives (the tests that check log lines).
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

namespace fff {

class LogCapture {
 public:
  explicit LogCapture(spdlog::logger& logger) : logger_(logger) {
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    logger_.sinks().push_back(sink_);
  }

  ~LogCapture() { logger_.sinks().pop_back(); }

  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string str() const { return text_.str(); }

 private:
  spdlog::logger& logger_;
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

}  // namespace fff
