#pragma once
// Two modes of dpi_bench beside its matrix (dpi_series.cpp):
//  - run_series: on all capture payloads (or the first `payloads`), for the full ET set and the >= 4-byte set, every engine
//    (Hyperscan, the automaton with 4 and 1 lanes, the prefilter path on each SIMD path the CPU has;
//    the *-hot engines: the same automata in visit order, AcOrder, trained on the second half of the
//    capture payloads)
//    runs one pass per round, engines interleaved, their order rotated each round and reversed every
//    other round; a round's ratio is an engine's rate over Hyperscan's in the same round (thread CPU time). Median and min-max of
//    the ratios over the rounds; every pass's match total must equal Hyperscan's.
//  - run_callgrind: one engine, one pass over the first `sample` capture payloads of one set, inside
//    the function dpi_bench_scan_pass (for valgrind --tool=callgrind --collect-atstart=no
//    --toggle-collect=dpi_bench_scan_pass); prints the payload bytes so that Ir / byte follows. With `steps`, no
//    valgrind: after a warm-up pass, the pass's instructions counted on this CPU by single-stepping
//    (hpr/step_count.hpp), so on the AVX-512 path too; prints "steps ENGINE SET SIMD: …, I instructions, X per byte".
#include <string>

namespace hpr::dpi::bench {

int run_series(const std::string& rules, int rounds, uint32_t batch, uint32_t payloads, const std::string& csv_path);
int run_callgrind(const std::string& rules, const std::string& engine, const std::string& set, uint32_t sample,
                  bool steps = false);

}  // namespace hpr::dpi::bench
