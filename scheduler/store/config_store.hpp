#pragma once
// ConfigStore: the configuration dictionary of the adaptive scheduler
// (hetero-opencl-adaptive-scheduler §4.1, complexity §4.2.1).
//
// Paper structure, kept as is:
//   * three binary search trees, one per outcome metric (throughput, latency, power); each supports an
//     exact and a nearest-neighbour lookup in O(log N) (std::map, a red-black tree);
//   * a new value within δ (relative) of the nearest existing node ("its parent") is merged into that node
//     instead of creating a new one, so the trees stay small;
//   * each node holds its configurations in two priority indexes ordered by the two other metrics;
//     power and latency are reversed and normalised (score = scale / value; throughput: value / scale),
//     so "higher score is better" everywhere and the best member is found in O(1).
//
// Policies (what the scheduler asks), each answered in O(log N) on a stable table:
//   * kEnergyCritical  (rate R): least power among configurations whose measured throughput >= R
//                                (power ties within tie_tolerance: least latency);
//   * kLatencyCritical (rate R): least median latency among configurations whose throughput >= R
//                                (latency ties: least power);
//   * kThroughputCritical: the highest throughput (ties within tie_tolerance: least power);
//   * kLatencyTarget   (rate R, target L): least power among configurations with throughput >= R and
//     p99 latency <= L — O(log N + k), k = cheaper configurations skipped because they miss L.
//   When no configuration sustains R, the policy falls back to the highest-throughput configuration.
//   Measurements have a spread (Configuration::*_spread_*, half-width of the median's confidence interval over the
//   profile's samples; architecture.md convention 13): wherever a policy compares two configurations' power, latency or
//   throughput, a difference smaller than their two spreads combined is a tie, resolved as a tie_tolerance tie is (by
//   the other less-is-better metric). Spread 0 (format-1 tables, hand-made stores) gives exactly the answers of
//   tie_tolerance alone. "Sustains R" compares a configuration with the requirement, not with another
//   configuration, and stays on the median.
//   The paper looks up only the nearest node; "sustains at least R" is a range query, which we answer on the
//   configurations' own measured values (not the merged node keys, which are only within δ) with
//   suffix-minimum arrays over the throughput order. They are built (O(N log N)) on the first policy query;
//   after that an insert or an update costs O(log N) in the trees (as in §4.2.1) plus an in-place move in
//   the orders and a refold of the suffix minima below the changed positions, stopping where they no longer
//   change (O(N) memory moves at worst, no sort).
//
// Not thread safe: the control thread owns it.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/store/configuration.hpp"

namespace hpr::sched {

enum class Metric : uint8_t { kThroughput = 0, kLatency = 1, kPower = 2 };
const char* metric_name(Metric m);

// Hash of a configuration's setup (device mask, batch sizes, split to 1e-4).
uint64_t setup_hash(const Configuration& c);

enum class Policy : uint8_t { kEnergyCritical, kLatencyCritical, kThroughputCritical, kLatencyTarget };
const char* policy_name(Policy p);                // "energy" | "latency" | "throughput" | "latency-target"
Result<Policy> parse_policy(std::string_view s);  // kInvalidArgument naming the value

struct Query {
  Policy policy = Policy::kEnergyCritical;
  double rate_bps = 0;           // traffic the configuration must sustain
  double latency_target_ns = 0;  // kLatencyTarget only
};

using ConfigId = uint32_t;
inline constexpr ConfigId kNoConfig = std::numeric_limits<ConfigId>::max();

struct StoreOptions {
  double delta = 0.10;  // δ: merge threshold and update threshold (paper: 10%)
  // Normalisation scales of the per-node indexes (score = value/scale or scale/value).
  double throughput_scale_bps = 1e10;
  double latency_scale_ns = 1e6;
  double power_scale_w = 100;
  // Policy answers: power (latency) values within this relative tolerance tie, and the tie goes to the lower
  // latency (power) — e.g. one device at several batch sizes with the same power: the smallest batch that
  // sustains R wins. Values closer than the two configurations' spreads combined tie as well (see above);
  // the latency-target policy's power comparison uses the spreads only.
  double tie_tolerance = 0.01;
};

// One node of a tree, as seen from outside.
struct NodeView {
  double key = 0;   // the metric value of the node (the first value inserted there)
  size_t size = 0;  // configurations merged into it
  // Best member by each of the two other metrics (score order); kNoConfig for the tree's own metric.
  std::array<ConfigId, 3> best_by{kNoConfig, kNoConfig, kNoConfig};
};

class ConfigStore {
 public:
  explicit ConfigStore(StoreOptions opt = {});

  // Adds a measured configuration. A configuration with the same setup (devices, batches, split) already in
  // the store is updated instead (see update()). Returns its id, or kInvalidArgument from validate().
  Result<ConfigId> insert(const Configuration& c);

  // A new measurement of configuration `id`: the medians, spreads and sample count of `measured` (its setup
  // fields are ignored). The stored values are replaced only when one metric (throughput, latency, power)
  // differs from the stored one by more than δ (relative, §4.2 step 3) and by more than the two spreads
  // combined (a difference inside the noise is no news); returns whether it did. `id` must be a valid id
  // (checked by assert).
  bool update(ConfigId id, const Configuration& measured);
  // One live sample: as above with samples = 1 and the stored spreads kept (the profile's estimate of how noisy
  // a measurement of this setup is), so a sample must also leave twice the stored spread to count.
  bool update(ConfigId id, double throughput_bps, double latency_ns, double latency_p99_ns, double power_w,
              PowerSource source);

  // The configuration with the same setup (devices, batch sizes, split), O(1) (hash of the setup).
  std::optional<ConfigId> find_setup(const Configuration& c) const;
  const Configuration& get(ConfigId id) const { return configs_[id]; }
  size_t size() const { return configs_.size(); }
  size_t node_count(Metric m) const { return trees_[static_cast<int>(m)].size(); }
  const StoreOptions& options() const { return opt_; }

  // O(log N) lookups in tree `m`.
  std::optional<NodeView> find_exact(Metric m, double value) const;    // a node whose key == value
  std::optional<NodeView> find_nearest(Metric m, double value) const;  // nearest key (ties: the smaller)
  std::vector<NodeView> nodes(Metric m) const;                         // in key order, for tests/inspection

  // The configuration the policy asks for; kNoConfig only when the store is empty.
  ConfigId best(const Query& q) const;

  // Normalised "higher is better" score of a metric value (§4.1: power and latency reversed).
  double score(Metric m, double value) const;
  double value_of(ConfigId id, Metric m) const;

 private:
  using Index = std::set<std::pair<double, ConfigId>, std::greater<>>;  // (score, id), best first
  struct Node {
    std::array<Index, 3> by;  // by[other metric]; by[own metric] stays empty
  };
  using Tree = std::map<double, Node>;

  void tree_insert(ConfigId id);
  void tree_erase(ConfigId id);
  NodeView view(Metric m, const Tree::const_iterator& it) const;
  void rebuild() const;
  bool better(ConfigId a, ConfigId b, Metric m) const;
  double spread_of(ConfigId id, Metric m) const;
  // |a - b| on metric m is smaller than the two spreads combined (never with both spreads 0).
  bool within_spread(ConfigId a, ConfigId b, Metric m) const;
  // Policy-index orders: (throughput, id) and (power, id), ascending.
  bool thr_less(ConfigId a, ConfigId b) const;
  bool power_less(ConfigId a, ConfigId b) const;
  std::pair<ConfigId, ConfigId> fold_at(size_t k) const;
  void set_max_throughput() const;
  // Incremental maintenance once built: detach before a configuration's values change (returns its old
  // position in the throughput order), attach after (kNoPos: a new configuration). No-ops before the build.
  static constexpr size_t kNoPos = static_cast<size_t>(-1);
  size_t index_detach(ConfigId id);
  void index_attach(ConfigId id, size_t old_pos);

  StoreOptions opt_;
  std::vector<Configuration> configs_;
  std::vector<std::array<double, 3>> node_key_;  // per config: the key of the node it sits in, per tree
  std::array<Tree, 3> trees_;
  std::unordered_multimap<uint64_t, ConfigId> by_setup_;
  std::array<double, 3> max_spread_{};  // largest spread per metric seen (insert, update): never shrinks

  // Policy indexes over measured values: built at the first query, then maintained by index_detach/attach.
  mutable bool built_ = false;
  mutable std::vector<double> thr_sorted_;          // ascending throughput
  mutable std::vector<ConfigId> thr_order_;         // ids in that order
  mutable std::vector<ConfigId> suffix_min_power_;  // over thr_order_[i..]
  mutable std::vector<ConfigId> suffix_min_latency_;
  mutable std::vector<ConfigId> power_order_;  // ids by ascending power (latency-target scan)
  mutable ConfigId max_throughput_ = kNoConfig;
};

}  // namespace hpr::sched
