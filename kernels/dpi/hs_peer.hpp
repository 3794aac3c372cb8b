#pragma once
// Hyperscan (Intel, block mode) on the same literal patterns: the peer for tests and benchmarks.
// Header-only so that hpr_kernels does not depend on libhs: targets that include it link
// PkgConfig::HS. Literals go through hs_compile_lit_multi (no regex escaping), HS_FLAG_CASELESS for
// nocase patterns, no HS_FLAG_SINGLEMATCH: the callback is called once per (pattern, end offset)
// and counts, so the figure is the same match count that AcDfa::scan returns.
#include <hs/hs.h>

#include <cstdint>
#include <vector>

#include "hpr/status.hpp"
#include "kernels/dpi/rules.hpp"

namespace hpr::dpi {

class HsPeer {
 public:
  HsPeer() = default;
  HsPeer(const HsPeer&) = delete;
  HsPeer& operator=(const HsPeer&) = delete;
  HsPeer(HsPeer&& o) noexcept : db_(o.db_), scratch_(o.scratch_) { o.db_ = nullptr; o.scratch_ = nullptr; }
  ~HsPeer() {
    if (scratch_ != nullptr) hs_free_scratch(scratch_);
    if (db_ != nullptr) hs_free_database(db_);
  }

  // Errors: kInvalidArgument with Hyperscan's compile message; kInternal when scratch fails.
  static Result<HsPeer> compile(const std::vector<Pattern>& patterns) {
    std::vector<const char*> expr;
    std::vector<size_t> lens;
    std::vector<unsigned> flags, ids;
    for (unsigned i = 0; i < patterns.size(); ++i) {
      expr.push_back(patterns[i].bytes.data());
      lens.push_back(patterns[i].bytes.size());
      flags.push_back(patterns[i].nocase ? HS_FLAG_CASELESS : 0);
      ids.push_back(i);
    }
    HsPeer h;
    hs_compile_error_t* err = nullptr;
    if (hs_compile_lit_multi(expr.data(), flags.data(), ids.data(), lens.data(), static_cast<unsigned>(expr.size()),
                             HS_MODE_BLOCK, nullptr, &h.db_, &err) != HS_SUCCESS) {
      Status s = error(Code::kInvalidArgument, "hyperscan compile failed at pattern {}: {}", err ? err->expression : -1,
                       err ? err->message : "?");
      hs_free_compile_error(err);
      return s;
    }
    if (hs_alloc_scratch(h.db_, &h.scratch_) != HS_SUCCESS) return error(Code::kInternal, "hs_alloc_scratch failed");
    return h;
  }

  // Number of matches in one block.
  uint32_t count(const uint8_t* p, uint32_t len) const {
    uint32_t n = 0;
    hs_scan(db_, reinterpret_cast<const char*>(p), len, 0, scratch_, &HsPeer::on_match, &n);
    return n;
  }
  size_t database_bytes() const {
    size_t s = 0;
    hs_database_size(db_, &s);
    return s;
  }

 private:
  static int on_match(unsigned /*id*/, unsigned long long /*from*/, unsigned long long /*to*/, unsigned /*flags*/,
                      void* ctx) {
    ++*static_cast<uint32_t*>(ctx);
    return 0;
  }
  hs_database_t* db_ = nullptr;
  hs_scratch_t* scratch_ = nullptr;
};

}  // namespace hpr::dpi
