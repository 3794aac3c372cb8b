// telemetry.hpp in a build without prometheus-cpp (HPR_WITH_PROMETHEUS=OFF, or AUTO where prometheus-cpp-dev was not
// found at configure time): the exporter refuses to start, naming the setting; everything else runs. Built instead of
// telemetry.cpp (pipeline/CMakeLists.txt).
#include "pipeline/telemetry.hpp"

namespace prometheus {
class Exposer {};  // never made here; complete only so that the unique_ptr member can be destroyed
}  // namespace prometheus

namespace hpr {

PrometheusExporter::PrometheusExporter() = default;
PrometheusExporter::~PrometheusExporter() = default;

Status PrometheusExporter::available() {
  return error(Code::kUnavailable,
               "telemetry.prometheus (--prometheus): this hpr was built without prometheus-cpp (HPR_WITH_PROMETHEUS=OFF, "
               "or prometheus-cpp-dev not found at configure time); use --summary-json or the status line, or rebuild "
               "with -DHPR_WITH_PROMETHEUS=ON");
}

Status PrometheusExporter::start(std::string, bool) { return available(); }

void PrometheusExporter::update(const Summary&) {}

}  // namespace hpr
