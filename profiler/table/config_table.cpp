#include "profiler/table/config_table.hpp"
#include "scheduler/store/json_number.hpp"

#include "hpr/atomic_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace hpr::prof {

using nlohmann::json;

std::string fingerprint_difference(const Fingerprint& t, const Fingerprint& m) {
  auto diff = [](const std::string& field, const std::string& a, const std::string& b) {
    return fmt::format("{}: table has '{}', this machine has '{}'", field, a, b);
  };
  if (t.hpr_version != m.hpr_version) return diff("hpr_version", t.hpr_version, m.hpr_version);
  if (t.app != m.app) return diff("app", t.app, m.app);
  if (t.devices.size() != m.devices.size())
    return fmt::format("devices: table has {} devices, this machine has {}", t.devices.size(), m.devices.size());
  for (size_t i = 0; i < t.devices.size(); ++i) {
    const auto &a = t.devices[i], &b = m.devices[i];
    if (a.name != b.name) return diff(fmt::format("devices[{}].name", i), a.name, b.name);
    if (a.driver != b.driver) return diff(fmt::format("devices[{}].driver", i), a.driver, b.driver);
    if (a.version != b.version) return diff(fmt::format("devices[{}].version", i), a.version, b.version);
  }
  return "";
}

namespace {

json to_json(const Fingerprint& f) {
  json devs = json::array();
  for (const auto& d : f.devices) devs.push_back({{"name", d.name}, {"driver", d.driver}, {"version", d.version}});
  return {{"hpr_version", f.hpr_version}, {"app", f.app}, {"traffic", f.traffic}, {"devices", devs}};
}

Fingerprint fingerprint_from(const json& j) {
  Fingerprint f;
  f.hpr_version = j.at("hpr_version").get<std::string>();
  f.app = j.at("app").get<std::string>();
  f.traffic = j.at("traffic").get<std::string>();
  for (const auto& d : j.at("devices"))
    f.devices.push_back({d.at("name").get<std::string>(), d.at("driver").get<std::string>(),
                         d.at("version").get<std::string>()});
  return f;
}

}  // namespace

Status save_table(const std::string& path, const ConfigTable& t) {
  json j = {{"format", "hpr-config-table"},
            {"version", t.version},
            {"complete", t.complete},
            {"fingerprint", to_json(t.fingerprint)},
            {"points", t.points}};
  return write_file_atomic(path, j.dump(1) + "\n", "configuration table");
}

Result<ConfigTable> load_table(const std::string& path, const Fingerprint& machine, bool allow_mismatch) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return error(Code::kInvalidArgument, "configuration table {}: is a directory; name the table file", path);
  std::ifstream in(path);
  if (!in) return error(Code::kNotFound, "configuration table {}: cannot open ({})", path, std::strerror(errno));
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return error(Code::kInvalidArgument, "configuration table {}: not valid JSON", path);
  ConfigTable t;
  try {
    if (j.value("format", std::string()) != "hpr-config-table")
      return error(Code::kInvalidArgument, "{}: not an hpr configuration table (\"format\" is not \"hpr-config-table\")",
                   path);
    t.version = sched::json_integer<int>(j.at("version"));
    if (t.version < kOldestTableFormatVersion || t.version > kTableFormatVersion)
      return error(Code::kInvalidArgument,
                   "{}: table format version {} is not supported (this hpr reads {} to {}); re-run `hpr profile`",
                   path, t.version, kOldestTableFormatVersion, kTableFormatVersion);
    t.complete = j.value("complete", false);
    t.fingerprint = fingerprint_from(j.at("fingerprint"));
  } catch (const json::exception& e) {
    return error(Code::kInvalidArgument, "{}: bad table header: {}", path, e.what());
  }
  if (std::string d = fingerprint_difference(t.fingerprint, machine); !d.empty() && !allow_mismatch)
    return error(Code::kInvalidArgument,
                 "{}: the table was profiled on another machine or setup ({}). Re-run `hpr profile` here, or pass "
                 "allow_mismatch (--allow-table-mismatch) to use it anyway",
                 path, d);
  const json& pts = j.contains("points") ? j.at("points") : json::array();
  for (size_t i = 0; i < pts.size(); ++i) {
    sched::Configuration c;
    try {
      c = pts[i].get<sched::Configuration>();
    } catch (const json::exception& e) {
      return error(Code::kInvalidArgument, "{}: points[{}]: {}", path, i, e.what());
    }
    if (Status s = sched::validate(c); !s.is_ok())
      return error(Code::kInvalidArgument, "{}: points[{}] ({}): {}", path, i, c.describe(), s.message());
    for (auto b : c.batch)
      if (b > kMaxTableBatch)
        return error(Code::kInvalidArgument, "{}: points[{}]: batch {} is above the largest lane batch {}; re-run `hpr profile`",
                     path, i, b, kMaxTableBatch);
    if (c.traffic.empty()) c.traffic = t.fingerprint.traffic;
    t.points.push_back(c);
  }
  return t;
}

Result<FillReport> fill_store(const ConfigTable& t, sched::ConfigStore& store, const std::string& traffic) {
  auto traffic_of = [&](const sched::Configuration& c) -> const std::string& {
    return c.traffic.empty() ? t.fingerprint.traffic : c.traffic;
  };
  bool any = false;
  std::vector<std::string> seen;  // the table's traffics, in order of appearance
  for (const auto& c : t.points) {
    any = any || traffic_of(c) == traffic;
    if (std::find(seen.begin(), seen.end(), traffic_of(c)) == seen.end()) seen.push_back(traffic_of(c));
  }
  bool all = traffic.empty() || !any;
  FillReport r;
  if (all && !traffic.empty() && !t.points.empty()) {
    std::string listed;
    for (const auto& s : seen) listed += (listed.empty() ? "'" : ", '") + s + "'";
    r.note = fmt::format("the table has no point measured on this traffic ('{}'); using every point ({}), "
                         "measured on {}",
                         traffic, t.points.size(), listed);
  }
  size_t placed = 0;
  for (size_t i = 0; i < t.points.size(); ++i) {
    if (!all && traffic_of(t.points[i]) != traffic) continue;
    if (!t.points[i].place.empty()) {  // learning mode's placement of services: the store's scheduler has none
      ++placed;
      continue;
    }
    auto id = store.insert(t.points[i]);
    if (!id) return error(Code::kInvalidArgument, "points[{}]: {}", i, id.status().message());
    ++r.inserted;
  }
  if (placed != 0)
    r.note += fmt::format("{}{} points place services (learning mode's): not used here", r.note.empty() ? "" : "; ",
                          placed);
  return r;
}

Result<TableWriter> TableWriter::create(std::string path, Fingerprint fp) {
  TableWriter w(std::move(path), std::move(fp));
  HPR_RETURN_IF_ERROR(w.save());
  return w;
}

Status TableWriter::append(const sched::Configuration& point) {
  HPR_RETURN_IF_ERROR(sched::validate(point));
  table_.points.push_back(point);
  return save();
}

Status TableWriter::finish() {
  table_.complete = true;
  return save();
}

}  // namespace hpr::prof
