#pragma once
// Captures everything spdlog's default logger says while alive (tests of what a factory logs).
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

namespace hpr::test {

struct LogCapture {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> old = spdlog::default_logger();
  LogCapture() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(old); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() {
    spdlog::default_logger()->flush();
    return out.str();
  }
};

}  // namespace hpr::test
