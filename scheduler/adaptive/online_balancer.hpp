#pragma once
// OnlineBalancer: the learning mode of `hpr run` (no table needed; docs/scheduler.md "Learning mode").
//
// Lanes share cores (every "device" here is the same CPU), so a lane's capacity measured alone is not what it adds
// to a run: the balancer learns from what the whole run delivers, as NBA's adaptive load balancer does. It moves
// load between lanes in steps and keeps a step only when the run's score (throughput; energy per bit under the
// energy policy; p99 latency under the latency policy) improves beyond the spread of the samples:
//
//   block     the incumbent setup I and its candidates C1…Ck are run in turns (I, C1, …, Ck, I, C1, …: drift hits
//             all alike), each visit a settling quantum and then `visit_quanta` scored quanta, until each has
//             min_samples and a relative spread within δ, or max_samples, or the answer is clear (after one
//             visit each when every candidate loses by more than clear_loss beyond the spreads); the best
//             candidate replaces I when its median score beats I's by more than both spreads together and by
//             min_gain (hpr/median_spread.hpp); under the throughput policy, in solo and mix, of the setups as fast
//             as the best, the one whose p99 latency is lower beyond the spreads and by more than 2δ (setups that
//             all carry a paced rate tie on throughput).
//   phases    solo    each lane alone, the lane that delivered most per busy second first (the first decisions come
//                     within the first second); not a lane whose bits per busy second are under 1/4 of the best
//                     lane's (it cannot win alone; a GPU shared by many workers): its rate alone is taken to be that;
//             mix     the best k lanes alone (k = 2 … N), shares in proportion to their rates alone; not under the
//                     energy policy where every live lane ran alone and carried the rate (every_lane_alone_carried);
//             batch   ×2 and ÷2 for the lanes whose batch is worth searching (OpenCL lanes), from min_batch to
//                     the lane's own largest (a discrete GPU's is larger than a CPU device's),
//                     until a pass finds nothing better; after a win, not back to the setup it beat;
//             shift   move `step` of the share from one lane to another (every ordered pair), the step halved after
//                     a pass without a win, down to min_step; a lane whose share reaches 0 is dropped, one with 0 can
//                     come back. Skipped when one lane alone beat every mix beyond the spreads (lanes that share
//                     cores: small moves towards the others do not pay either, and exploring them costs);
//             place   with services the user did not place (Setup::place), one block per service: it on each other
//                     live lane (its flows only there, whatever the shares), at the shares as they are and with that
//                     lane's share halved (it takes the service's load now), or back among the shares; a pass over
//                     every service; after a win the shift passes tune the shares, then another pass. After shift
//                     (or batch where shift is skipped), and in a re-check after a hold of place_recheck_hold_s or
//                     more (a drift searches again from solo, whose candidates place no service; a lane that became
//                     good for one service shows in no drift).
//             hold    run the incumbent; after `hold_s` (saved_hold_s the first time from a saved setup; doubling
//                     while nothing better is found, up to max_hold_s) a re-check: the batch pass and one shift
//                     pass at first_step (at min_step a lane that recovered gains too little to show beyond the
//                     noise; a losing pass ends early on a clear loss; none where the energy policy skipped the mix
//                     block: its moves make mixes), then after a hold of place_recheck_hold_s or more one place
//                     pass; a win there means the machine or the
//                     traffic changed (a lane recovered): the search starts over from solo.
//             probe   in hold, each lane whose own rate fell and that has no share, alone (after probe_s, doubling):
//                     a win searches again from solo.
//   confirm   a local move (batch, shift) that won among several candidates must win a block of its own against
//             the incumbent (the best of k wins on noise alone about k times as often).
//   drift     `drift_quanta` samples of the incumbent in a row (inside a block: a whole visit) below its figures by
//             more than 3 spreads + 2δ (a lane slowed down, a traffic or rate step) start over from solo (above them,
//             the reference moves up); a lane
//             whose own rate (bits per busy second) fell below half of what it was loses its share at once.
//   check     under the throughput policy, a drift in which no lane's own rate halved (the machine may just have
//             slowed) is first a block of the incumbent against the lane that delivers most per busy second (of a
//             one-lane incumbent: the best other lane), alone (unless solo would not run it alone) and as a step
//             of first_step towards it from the incumbent's lane (of a mix: its slowest): a win searches again from
//             solo, a loss keeps the incumbent with its figures taken afresh.
//
// A quantum is scored only when the setup it ran was in force for the whole quantum (settle_quanta after a change:
// flows move to their new lane only once nothing of theirs is in flight, so a change never reorders), and the
// packets of the setup before it have left (as many quanta as its p99 latency, up to max_settle_quanta).
// Pure: input = figures of one quantum, output = the setup to run next; no clocks, threads or I/O.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "hpr/status.hpp"
#include "hpr/median_spread.hpp"
#include "scheduler/store/config_store.hpp"

namespace hpr::sched {

struct BalancerParams {
  Policy policy = Policy::kThroughputCritical;
  double latency_target_ns = 0;  // kLatencyTarget
  double delta = 0.05;           // relative spread a block aims at; a rate within δ of the best carries it
  double min_gain = 0.02;        // smallest relative improvement taken
  uint32_t min_samples = 4, max_samples = 12;
  // After one visit of each candidate (visit_quanta samples), a block whose candidates all lose by more than this
  // share of the incumbent's median, beyond both spreads, is done once the incumbent has min_samples (0: off).
  double clear_loss = 0.2;
  uint32_t settle_quanta = 1;
  // After a change, also as many quanta as the p99 latency (rx to tx) of the setup left, up to this: its packets are
  // still leaving, the flows held by the move rule until they have (a slow lane's backlog of 100+ ms at 40 ms quanta:
  // dpi,md5 on PoCL and a native lane here, where one settling quantum scored native0 alone at half its rate and the
  // catch-up after it for the mix, and learning ran 0.41x native0 alone, docs/scheduler.md).
  uint32_t max_settle_quanta = 4;
  uint32_t visit_quanta = 2;  // scored quanta per visit
  uint32_t warmup_quanta = 5;  // not scored at the start of a run from a saved setup
  double first_step = 0.125, min_step = 1.0 / 16;
  uint32_t min_batch = 32;  // the largest is each lane's (OnlineBalancer::create's batch_max)
  double hold_s = 4, max_hold_s = 64;
  // The first hold of a run started from a saved setup (at most hold_s; then hold_s, doubling): figures saved under
  // a disturbance are re-checked soon, not after a whole hold.
  double saved_hold_s = 1;
  // A re-check runs a place pass only after a hold at least this long: the pass tries every service on every other
  // lane (1.9 s of losing candidates on 2 cores with three services), so after short holds it would cost a large part
  // of the run (a 12 s run from saved state: 0.80x the rate without it); from 16 s on, at most about a tenth.
  double place_recheck_hold_s = 16;
  // A lane whose own rate fell (drift) and that has no share is tried alone after probe_s in hold, then after twice
  // that, … up to max_hold_s, until it has a share again: where lanes share cores, a small move towards a lane that
  // recovered loses (it takes cores from the others), so only a visit alone shows the recovery.
  double probe_s = 1;
  uint32_t drift_quanta = 3;
  // Quanta of offered rates whose median is the reference: a quantum whose offered rate falls more than 2δ below it is
  // scored against the reference (score()).
  uint32_t rate_window = 50;
};
// kInvalidArgument naming the parameter.
Status validate(const BalancerParams& p);

// One quantum of the setup in force.
struct QuantumFigures {
  uint64_t now_ns = 0;
  double offered_bps = 0, achieved_bps = 0, power_w = 0, latency_p50_ns = 0, latency_p99_ns = 0;
  uint64_t lost_packets = 0;  // dropped for want of capacity
  // The rate the input is set to offer (a generator's --rate-pps, in bits at this quantum's packet sizes); 0: not
  // known (a port, an unpaced generator). Under the throughput policy a quantum scores at most this.
  double pace_bps = 0;
  std::vector<double> lane_bps, lane_util;
};

struct Setup {
  std::vector<float> weight;    // shares of new flows, sum 1; 0: the lane takes no new flow
  std::vector<uint32_t> batch;  // per lane
  // Per service (empty: no service is placed by the learner): the lane its flows all go to; -1: among the shares
  // (or the lanes the user gave it).
  std::vector<int16_t> place;
  bool operator==(const Setup&) const = default;
  bool placed() const;  // some service is placed
  // Whether lane i takes new flows: a share, or a service placed on it.
  bool takes(size_t i) const;
  std::string describe() const;  // "w 0.50/0.25/0.25 b 256/256/256", and " p -/1/-" when a service is placed
};

// The policy's score of figures measured while `rate_bps` was offered (higher is better): throughput in Gbit/s;
// energy: minus the nJ per bit; latency: minus the p99 in µs; latency target: minus the nJ per bit when the p99 is
// within the target. A rate not carried (packets lost, or achieved below (1-δ) of the rate) scores below every rate
// carried, in order of the share carried.
double policy_score(const BalancerParams& p, double achieved_bps, double rate_bps, double power_w,
                    double latency_p99_ns, uint64_t lost_packets);

// A setup's figures from a finished block (median and spread of each).
struct MeasuredSetup {
  Setup setup;
  MedianSpread rate_bps, power_w, latency_p50_ns, latency_p99_ns;
};

class OnlineBalancer {
 public:
  // `batch_max[i]`: the largest batch searched for lane i (at least p.min_batch); 0: its batch is not searched.
  // `start`: a saved setup to start from (its lane count must match); otherwise equal shares at `batch`.
  // `placeable`: per service, whether the learner may place it (the place phase; none: the phase is skipped).
  // Errors: kInvalidArgument (parameters, no lane, sizes).
  static Result<OnlineBalancer> create(const BalancerParams& p, std::vector<uint32_t> batch,
                                       std::vector<uint32_t> batch_max, std::optional<Setup> start = {},
                                       std::vector<bool> placeable = {});
  // The figures of the quantum just run on setup(); returns the setup for the next quantum.
  const Setup& step(const QuantumFigures& q);
  // A lane that failed: no share from now on; the search starts over.
  void lane_lost(size_t lane);

  const Setup& setup() const { return running_; }      // in force now (incumbent or candidate)
  const Setup& incumbent() const { return inc_; }       // the best setup found so far
  const MedianSpread& incumbent_score() const { return inc_stats_; }
  bool changed() const { return changed_; }             // the last step changed setup()
  // What the last step decided, for the log ("" when nothing was decided).
  const std::string& event() const { return event_; }
  const char* phase_name() const;
  // The setups whose block finished in the last step, with their figures (empty in most steps).
  const std::vector<MeasuredSetup>& measured() const { return measured_; }
  uint64_t blocks() const { return blocks_; }  // blocks measured
  uint64_t wins() const { return wins_; }
  uint64_t restarts() const { return restarts_; }
  uint64_t checks() const { return checks_; }  // drifts checked against the nearest setups before a search (phase check)
  double score(const QuantumFigures& q) const;  // the policy's score of one quantum (higher is better)

 private:
  enum class Phase { kStart, kSolo, kMix, kShift, kBatch, kPlace, kHold, kProbe, kCheck };
  OnlineBalancer() = default;
  void start_phase(Phase ph);
  void after(Phase ph);  // the phase that follows a finished pass of `ph`
  // Under the energy policy, after a solo block in which every live lane ran alone and carried the rate: no mix
  // can cost less per bit than the best lane alone (below), so the mix block is not run.
  bool every_lane_alone_carried() const;
  bool next_block();  // false: the phase has no candidate left (place: no service left)
  Phase after_local() const;  // after the batch and shift passes: place (a service to place) or hold
  Phase after_recheck() const { return recheck_place_ ? after_local() : Phase::kHold; }  // a re-check's last pass
  std::vector<Setup> candidates() const;
  void run(const Setup& s);
  bool block_done() const;
  // Under the throughput policy, in the solo and mix phases: among the setups as fast as block member `fastest` (the
  // incumbent, or the candidate that beat it; as fast = not beaten by it beyond both spreads and min_gain; when a
  // candidate beat the incumbent, only those that beat it too), the candidate whose p99 latency is lower than
  // `fastest`'s beyond both spreads and by more than 2δ (the lowest such); 0: none. At a rate that every setup
  // carries, their throughputs all tie.
  size_t latency_win(size_t fastest) const;
  // Every candidate, visited at least once, loses by more than p_.clear_loss: the block ends once the incumbent has
  // min_samples (its figures are the hold's reference for drift).
  bool clear_loss() const;
  void finish_block();
  void hold_sample(double s, const QuantumFigures& q);
  // Whether `quanta` samples of the incumbent in a row were off its figures (else notes its lanes' rates).
  bool drifted(double s, const QuantumFigures& q, uint32_t quanta);
  void restart(double s, const QuantumFigures& q);
  // What a drift of the incumbent is checked against before a search (restart): lane `to` alone (when `alone`), and a
  // step of first_step from lane `from` to it. None: search at once.
  struct CheckMove {
    size_t from, to;
    bool alone;
  };
  std::optional<CheckMove> check_move(bool lane_fell) const;
  CheckMove check_{};
  void note_lanes(const QuantumFigures& q);  // order_ from the lanes' delivered bits per busy second
  double rank(size_t i) const { return i < order_.size() ? order_[i] : 0.0; }  // order_[i]; 0: not measured
  size_t fastest_lane() const;  // the live lane of the highest rank > 0 (the lane count: none)
  void skip_slow_solos();  // solo_rate_: estimated for the lanes too slow to be run alone

  BalancerParams p_;
  std::vector<uint32_t> batch_max_;  // per lane; 0: not searched
  std::vector<bool> placeable_;      // per service
  size_t place_svc_ = 0;             // the service whose block the place phase runs
  std::vector<bool> alive_;
  Setup inc_, running_;
  MedianSpread inc_stats_;
  Phase phase_ = Phase::kStart;
  bool from_saved_ = false;
  bool won_in_pass_ = false;
  double step_ = 0.125;
  std::vector<double> order_;      // per lane: delivered bits per busy second, median of busy_rates_ (solo order)
  std::vector<std::deque<double>> busy_rates_;  // per lane: the last quanta's bits per busy second
  std::vector<double> solo_rate_;  // per lane: median rate alone (0: not measured)
  std::vector<double> lane_ref_;   // per lane: bits per busy second while the incumbent ran as expected
  bool confirming_ = false;        // the block confirms the winner of the previous one
  bool fresh_inc_ = false;         // the block's incumbent samples are the start phase's: it is not visited first
  bool local_shift_ = true;        // the shift phase follows batch (not when one lane alone beat every mix)
  bool recheck_ = false;           // the batch and shift passes (or a probe) are a re-check from hold
  bool alone_best_ = false;        // energy: the last solo block found every live lane alone carrying the rate
  std::vector<bool> fallen_;       // per lane: its own rate fell, and it has had no share since (probed alone)
  double probe_s_ = 1;
  uint64_t probe_at_ns_ = 0;
  bool probed(size_t lane) const;  // a lane the probe phase runs alone: alive, fallen, no share
  bool probe_due() const;          // in hold: the probe's time has come and a lane is to be probed
  // The setup that the last win of a batch or shift pass replaced: it has just lost, so the passes that go on from the
  // winner do not try it again (a batch that doubled and won is not halved back: each step is one candidate, and a
  // block of one candidate needs no confirming one). Cleared where a search starts (solo, mix) and in hold.
  std::optional<Setup> beaten_;
  // block: block_[0] is the incumbent
  std::vector<Setup> block_;
  struct Samples {
    std::vector<double> score, rate, power, p50, p99;
    void add(double s, const QuantumFigures& q);
  };
  std::vector<Samples> samples_;  // per block member
  std::vector<MeasuredSetup> measured_;
  size_t visit_ = 0;
  uint32_t left_ = 0, settle_ = 0;
  double left_p99_ns_ = 0;   // the highest p99 of the running setup's scored quanta (the setup a change leaves)
  uint64_t quantum_ns_ = 0;  // the last quantum's length
  // hold
  uint32_t off_count_ = 0;
  std::vector<double> up_;  // consecutive incumbent samples above its figures
  uint64_t hold_until_ns_ = 0, now_ns_ = 0;
  double hold_s_ = 4;
  bool recheck_place_ = false;  // this re-check ends with a place pass (its hold lasted place_recheck_hold_s)
  std::deque<double> offered_;
  double ref_offered_ = 0;  // the offered rate (median) when the incumbent's figures were taken
  double recent_offered(size_t n) const;  // median of the last n quanta's offered rates
  bool rate_moved();  // in hold: the offered rate moved by more than max(2δ, 25 %) (rate-dependent policies)
  bool changed_ = false;
  std::string event_;
  uint64_t blocks_ = 0, wins_ = 0, restarts_ = 0, checks_ = 0;
};

}  // namespace hpr::sched
