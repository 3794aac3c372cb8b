// Hot-state order of the automaton (see AcOrder in ac.hpp) and its training payloads.
#include "kernels/dpi/hot_order.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "kernels/dpi/ac.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

namespace hpr::dpi {

void AcDfa::reorder_by_visits(const AcOrder& order) {
  const uint32_t W = row_words_;
  const auto n = static_cast<uint32_t>(trans_words_ / W);
  const uint32_t keep = std::max(order.keep_depths, 1u);  // the root alone in band 0: it stays state 0
  // 1. Visits on the BFS table: the state entered after each byte.
  std::vector<uint64_t> visits(n, 0);
  const AcTables t = tables();
  uint64_t total = 0;
  for (std::span<const uint8_t> p : order.train) {
    uint32_t row = 0;
    for (uint8_t b : p) {
      row = t.trans[row + t.cls[b]] & kRowMask;
      ++visits[row / W];
    }
    total += p.size();
  }
  // 2. New order: (band, visits descending, BFS number). BFS numbering groups the states by depth.
  std::vector<uint32_t> band(n);
  for (uint32_t d = 0; d < depth_row_.size(); ++d) {
    const uint32_t end = d + 1 < depth_row_.size() ? depth_row_[d + 1] / W : n;
    for (uint32_t s = depth_row_[d] / W; s < end; ++s) band[s] = std::min(d, keep);
  }
  std::vector<uint32_t> old_of(n);
  std::iota(old_of.begin(), old_of.end(), 0u);
  std::stable_sort(old_of.begin(), old_of.end(), [&](uint32_t a, uint32_t b) {
    return band[a] != band[b] ? band[a] < band[b] : visits[a] > visits[b];
  });
  std::vector<uint32_t> new_row(n);
  for (uint32_t s = 0; s < n; ++s) new_row[old_of[s]] = s * W;
  // 3. Rows moved whole (the output record in words 0..3 travels with its row, so out_ids is
  //    unchanged); transition words keep their flags and inline count, get the new row offset.
  const uint32_t ncls = stats_.classes;
  std::unique_ptr<uint32_t[], Free> nt(alloc_table(trans_words_));
  if (!nt) {
    trans_.reset();  // build() reports the allocation failure
    return;
  }
  for (uint32_t s = 0; s < n; ++s) {
    const uint32_t* src = &trans_[uint64_t{old_of[s]} * W];
    uint32_t* dst = &nt[uint64_t{s} * W];
    std::copy(src, src + kRowHeader, dst);
    for (uint32_t c = kRowHeader; c < kRowHeader + ncls; ++c) dst[c] = (src[c] & ~kRowMask) | new_row[(src[c] & kRowMask) / W];
  }
  trans_ = std::move(nt);
  if (depth_row_.size() > keep + 1) depth_row_.resize(keep + 1);  // band d starts where depth d did (d <= keep)
  // 4. Stats: the visits that land on the first 1 MB of rows, before and after.
  const uint32_t mb_rows = std::min(n, (1u << 20) / (W * 4));
  uint64_t all = 0, bfs = 0, hot = 0;
  for (uint32_t s = 0; s < n; ++s) all += visits[s];
  for (uint32_t s = 0; s < mb_rows; ++s) bfs += visits[s], hot += visits[old_of[s]];
  stats_.train_bytes = total;
  stats_.visit_share_1mb_bfs = all ? static_cast<double>(bfs) / all : 0;
  stats_.visit_share_1mb = all ? static_cast<double>(hot) / all : 0;
}

Result<std::vector<std::vector<uint8_t>>> load_payloads(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return error(Code::kNotFound, "{} '{}': no such file or directory", what, path);
  const bool dir = std::filesystem::is_directory(path, ec);
  std::vector<std::string> files = dir ? list_captures(path) : std::vector<std::string>{path};
  std::vector<std::vector<uint8_t>> out;
  for (const std::string& f : files) {
    auto c = load_capture(f);
    if (!c.is_ok() && dir) continue;  // as the bench's capture workload: unreadable captures skipped
    if (!c.is_ok()) return error(Code::kInvalidArgument, "{} '{}': {}", what, f, c.status().message());
    for (auto& frame : c->frames) {
      if (frame.size() > 65535) continue;
      Packet p;
      p.data = frame.data();
      p.len = static_cast<uint16_t>(frame.size());
      if (parse(p) != DropReason::kNone || p.payload_off == kNoOffset || p.payload_len == 0) continue;
      out.emplace_back(p.payload(), p.payload() + p.payload_len);
    }
  }
  if (out.empty()) return error(Code::kInvalidArgument, "{} '{}': no packet with a payload", what, path);
  return out;
}

std::vector<std::span<const uint8_t>> payload_spans(const std::vector<std::vector<uint8_t>>& payloads, size_t from,
                                                    size_t to) {
  std::vector<std::span<const uint8_t>> v;
  for (size_t i = from; i < std::min(to, payloads.size()); ++i) v.emplace_back(payloads[i]);
  return v;
}

}  // namespace hpr::dpi
