#pragma once
// The configuration table file written by `hpr profile` and read by the daemon (hetero-opencl-adaptive-scheduler
// §4.1: the profiled dictionary of configurations). Versioned JSON (nlohmann):
//   { "format": "hpr-config-table", "version": 1, "complete": false|true,
//     "fingerprint": { "hpr_version": "0.1.0", "app": "md5", "traffic": "...",
//                      "devices": [ {"name": ..., "driver": ..., "version": ...}, ... ] },
//     "points": [ Configuration, ... ] }
// A table measured on another machine (other devices, drivers, hpr version, app or traffic) describes another
// machine: load() refuses it, naming the first differing field, unless allow_mismatch is set.
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

inline constexpr int kTableFormatVersion = 1;

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
  std::string traffic;  // description of the traffic used while profiling (file, sizes, match rate)
  bool operator==(const Fingerprint&) const = default;
};

// "" when equal; else the first difference, e.g. "devices[1].driver: table has '9.17', this machine has '3.1'".
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

// Reads and checks a table. Errors: kNotFound (no such file), kInvalidArgument (not JSON, wrong format or
// version, a bad point — with its index —, or a fingerprint that differs from `machine` while !allow_mismatch;
// the message names the field and says how to override).
Result<ConfigTable> load_table(const std::string& path, const Fingerprint& machine, bool allow_mismatch = false);

// Inserts every point into `store`; kInvalidArgument names the first point the store refuses.
Status fill_store(const ConfigTable& t, sched::ConfigStore& store);

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
