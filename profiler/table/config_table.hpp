#pragma once
// The configuration table file written by `hpr profile` and read by the daemon (hetero-opencl-adaptive-scheduler
// §4.1: the profiled dictionary of configurations). Versioned JSON (nlohmann):
//   { "format": "hpr-config-table", "version": 2, "complete": false|true,
//     "fingerprint": { "hpr_version": "0.1.0", "app": "md5", "traffic": "...",
//                      "devices": [ {"name": ..., "driver": ..., "version": ...}, ... ] },
//     "points": [ Configuration, ... ] }
// A point (sched::Configuration's JSON) holds the medians of its samples, their spreads
// ("throughput_spread_bps", "latency_spread_ns", "latency_p99_spread_ns", "power_spread_w"), "samples", and the
// "traffic" it was measured on (absent: the fingerprint's traffic, the table's default). Version 1 (no spreads,
// samples, traffic per point) still loads: spread 0, 1 sample, the fingerprint's traffic.
// The fingerprint describes the machine, not the traffic: a table measured on another machine (other devices,
// drivers, hpr version) or for another app describes something else, and load_table() refuses it, naming the first
// differing field, unless allow_mismatch is set; the traffic is a dimension of the table (fill_store picks the
// points of the traffic asked for).
// Interrupted profiling keeps what was measured: TableWriter rewrites the file atomically (temp file + rename)
// after every point, so the file on disk is always a valid table ("complete": false until finish()).
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "scheduler/store/config_store.hpp"
#include "scheduler/store/configuration.hpp"

namespace hpr::prof {

// The largest batch a lane takes (lanes.batch / lanes.max_batch): a table point above it is refused.
inline constexpr uint32_t kMaxTableBatch = 65536;

inline constexpr int kTableFormatVersion = 2;        // what save_table writes
inline constexpr int kOldestTableFormatVersion = 1;  // the oldest load_table reads

struct DeviceFingerprint {
  std::string name;     // "pthread-AMD EPYC", "NVIDIA GeForce GTX 480"
  std::string driver;   // OpenCL platform / driver name
  std::string version;  // driver version
  bool operator==(const DeviceFingerprint&) const = default;
};

struct Fingerprint {
  std::vector<DeviceFingerprint> devices;
  std::string hpr_version = HPR_VERSION;
  std::string app;      // "ipv4" | "dpi" | "md5" | "aes"
  std::string traffic;  // the traffic profiled (file, sizes, match rate): the default of points without their own
  bool operator==(const Fingerprint&) const = default;
};

// "" when equal but for the traffic; else the first difference (hpr_version, app, devices), e.g.
// "devices[1].driver: table has '9.17', this machine has '3.1'".
std::string fingerprint_difference(const Fingerprint& table, const Fingerprint& machine);

struct ConfigTable {
  int version = kTableFormatVersion;
  bool complete = false;
  Fingerprint fingerprint;
  std::vector<sched::Configuration> points;
};

// Writes atomically (hpr/atomic_file.hpp: a unique temporary file, then rename). Errors: kIoError naming
// the path and errno text; kInvalidArgument when the path exists and is not a regular file.
Status save_table(const std::string& path, const ConfigTable& t);

// Reads and checks a table (format version 1 or 2); every point comes back with its traffic set (the fingerprint's
// where the file has none). A traffic other than machine.traffic is not an error. Errors: kNotFound (no such
// file), kInvalidArgument (not JSON, wrong format or version, a bad point — with its index, setup and field —, or
// a fingerprint (hpr version, app, devices) that differs from `machine` while !allow_mismatch; the message names
// the field and says how to override).
Result<ConfigTable> load_table(const std::string& path, const Fingerprint& machine, bool allow_mismatch = false);

// What fill_store inserted.
struct FillReport {
  size_t inserted = 0;  // points given to the store (a setup seen twice is one configuration, updated)
  std::string note;     // "" or why all points were used, and the points left out, for the caller to log
};

// Inserts the points measured on `traffic` into `store`; when `traffic` is empty, or the table has no point
// measured on it, every point (then `note` names the traffic asked for and those in the table; a setup measured
// on several traffics is then one configuration, updated by the later point as ConfigStore::insert does). Points
// that place services (learning mode's, Configuration::place) are not inserted: `note` counts them.
// Errors: kInvalidArgument naming the first point the store refuses.
Result<FillReport> fill_store(const ConfigTable& t, sched::ConfigStore& store, const std::string& traffic = "");

// Incremental writer for the profiling loop: create(), then append() after each measured point (the file on
// disk is rewritten each time, so an interrupted run keeps every point appended), finish() at the end.
// Cost: one rewrite of the file per point (≈ 200 bytes per point; far below the 40 ms quantum of a point).
class TableWriter {
 public:
  // Errors: kIoError when the file cannot be written.
  static Result<TableWriter> create(std::string path, Fingerprint fp);
  // Errors: kInvalidArgument from sched::validate (point not added), kIoError from saving.
  Status append(const sched::Configuration& point);
  Status save() const { return save_table(path_, table_); }  // e.g. from a SIGINT-aware loop
  Status finish();                                          // marks "complete": true and saves
  const ConfigTable& table() const { return table_; }
  const std::string& path() const { return path_; }

 private:
  TableWriter(std::string path, Fingerprint fp) : path_(std::move(path)) { table_.fingerprint = std::move(fp); }
  std::string path_;
  ConfigTable table_;
};

}  // namespace hpr::prof
