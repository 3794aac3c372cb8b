// Aho-Corasick DFA construction (see ac.hpp for the table layout).
#include "kernels/dpi/ac.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <sys/mman.h>

namespace hpr::dpi {
namespace {

bool has_letter(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto b = static_cast<uint8_t>(c);
    return (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z');
  });
}

struct Node {
  uint32_t first_child = 0;  // 0: none (node 0 is the root, never a child)
  uint32_t next_sibling = 0;
  uint8_t cls = 0;
};

}  // namespace

uint32_t* AcDfa::alloc_table(size_t words) {
  constexpr size_t kHuge = 2u << 20;
  const size_t bytes = (words * 4 + kHuge - 1) / kHuge * kHuge;
  auto* p = static_cast<uint32_t*>(std::aligned_alloc(kHuge, bytes));
  if (p == nullptr) return nullptr;
  madvise(p, bytes, MADV_HUGEPAGE);  // a hint: fine if THP is off
  std::memset(p, 0, bytes);
  return p;
}

Result<AcDfa> AcDfa::build(const std::vector<Pattern>& patterns, uint64_t max_table_bytes) {
  return build(patterns, AcOrder{}, max_table_bytes);
}

Result<AcDfa> AcDfa::build(const std::vector<Pattern>& patterns, const AcOrder& state_order, uint64_t max_table_bytes) {
  auto t0 = std::chrono::steady_clock::now();
  if (patterns.empty()) return error(Code::kInvalidArgument, "Aho-Corasick: no patterns");
  AcDfa d;

  // 1. Alphabet: folded bytes that occur in some pattern get their own class; the rest share class 1.
  std::array<bool, 256> used{};
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (patterns[i].bytes.empty()) return error(Code::kInvalidArgument, "Aho-Corasick: pattern {} is empty", i);
    for (char c : patterns[i].bytes) used[fold_ascii(static_cast<uint8_t>(c))] = true;
  }
  // Class values are word indices in a row: kRowHeader (bytes in no pattern), then one per used byte.
  uint32_t ncls = 1;
  std::array<uint8_t, 256> folded_class{};
  for (int b = 0; b < 256; ++b) folded_class[b] = used[b] ? static_cast<uint8_t>(kRowHeader + ncls++) : kRowHeader;
  for (int b = 0; b < 256; ++b) d.byte_class_[b] = folded_class[fold_ascii(static_cast<uint8_t>(b))];
  if (ncls + kRowHeader > 256) {
    // 256 used bytes: everything but the folded upper-case letters; cannot happen (letters fold).
    return error(Code::kInternal, "Aho-Corasick: {} classes do not fit a byte", ncls);
  }
  const uint32_t W = (ncls + kRowHeader + 15) / 16 * 16;
  d.row_words_ = W;

  // 2. Trie over classes (first-child/next-sibling lists), terminal pattern ids per node.
  std::vector<Node> nodes(1);
  std::vector<std::vector<uint32_t>> own(1);
  size_t total_len = 0;
  for (const auto& p : patterns) total_len += p.bytes.size();
  nodes.reserve(total_len + 1);
  for (uint32_t id = 0; id < patterns.size(); ++id) {
    uint32_t s = 0;
    for (char c : patterns[id].bytes) {
      uint8_t k = d.byte_class_[static_cast<uint8_t>(c)];
      uint32_t ch = nodes[s].first_child;
      while (ch != 0 && nodes[ch].cls != k) ch = nodes[ch].next_sibling;
      if (ch == 0) {
        ch = static_cast<uint32_t>(nodes.size());
        nodes.push_back({0, nodes[s].first_child, k});
        nodes[s].first_child = ch;
        own.emplace_back();
      }
      s = ch;
    }
    own[s].push_back(id);
  }
  const uint64_t nstates = nodes.size();

  // Size check before the big allocation.
  uint64_t trans_bytes = nstates * W * 4;
  max_table_bytes = std::min(max_table_bytes, kMaxTableBytes);
  if (trans_bytes > max_table_bytes) {
    return error(Code::kInvalidArgument,
                 "Aho-Corasick: {} states x {} words = {} MB exceeds the limit of {} MB (device max allocation)", nstates,
                 W, trans_bytes >> 20, max_table_bytes >> 20);
  }

  // 3. BFS: renumber states in BFS order (shallow states first: the hot ones sit together at the
  //    start of the table), resolve transitions through failure links, build output lists.
  std::vector<uint32_t> order;  // BFS order of trie nodes
  order.reserve(nstates);
  std::vector<uint32_t> new_id(nstates);
  std::vector<uint32_t> fail(nstates, 0);
  order.push_back(0);
  new_id[0] = 0;
  std::vector<uint32_t> depth(nstates, 0);
  for (size_t qi = 0; qi < order.size(); ++qi) {
    const uint32_t dq = depth[order[qi]];
    if (d.depth_row_.size() == dq) d.depth_row_.push_back(static_cast<uint32_t>(qi * W));
    for (uint32_t ch = nodes[order[qi]].first_child; ch != 0; ch = nodes[ch].next_sibling) {
      depth[ch] = dq + 1;
      new_id[ch] = static_cast<uint32_t>(order.size());
      order.push_back(ch);
    }
  }
  d.trans_.reset(alloc_table(nstates * W));
  if (!d.trans_) return error(Code::kInternal, "Aho-Corasick: cannot allocate {} MB", (nstates * W * 4) >> 20);
  d.trans_words_ = nstates * W;
  std::vector<uint32_t> list_off(nstates, 0), list_len(nstates, 0);
  std::vector<uint32_t> out_list;  // flat, in BFS order; entries are id | kVerify
  std::vector<uint8_t> needs_verify(patterns.size());
  for (uint32_t id = 0; id < patterns.size(); ++id) {
    needs_verify[id] = !patterns[id].nocase && has_letter(patterns[id].bytes);
    d.stats_.verify_patterns += needs_verify[id];
  }
  uint32_t max_list = 0;
  for (uint32_t node : order) {
    const uint32_t s = new_id[node];
    uint32_t* row = &d.trans_[uint64_t{s} * W];
    // Output list: own ids merged with the failure state's (already built: shallower).
    {
      std::vector<uint32_t> mine;
      for (uint32_t id : own[node]) mine.push_back(id | (needs_verify[id] ? kVerify : 0));
      std::sort(mine.begin(), mine.end(), [](uint32_t a, uint32_t b) { return (a & ~kVerify) < (b & ~kVerify); });
      uint32_t f = fail[s];
      size_t off = out_list.size();
      if (s != 0 && list_len[f] != 0) {
        // merge two id-sorted lists
        size_t a = 0, b = list_off[f], be = list_off[f] + list_len[f];
        while (a < mine.size() || b < be) {
          if (b >= be || (a < mine.size() && (mine[a] & ~kVerify) < (out_list[b] & ~kVerify))) out_list.push_back(mine[a++]);
          else out_list.push_back(out_list[b++]);
        }
      } else {
        out_list.insert(out_list.end(), mine.begin(), mine.end());
      }
      list_off[s] = static_cast<uint32_t>(off);
      list_len[s] = static_cast<uint32_t>(out_list.size() - off);
      max_list = std::max(max_list, list_len[s]);
    }
    // Transitions: the failure state's row, overridden by own children.
    if (s != 0) std::memcpy(row + kRowHeader, &d.trans_[uint64_t{fail[s]} * W + kRowHeader], ncls * 4);
    for (uint32_t ch = nodes[node].first_child; ch != 0; ch = nodes[ch].next_sibling) {
      uint32_t t = new_id[ch];
      // Child's failure state: where the failure state goes on the same class (root's children: root).
      // (Entries hold state ids in this pass; step 4 turns them into row offsets and flags, since
      // ft may be a state of the same depth whose output list is not built yet.)
      uint32_t ft = s == 0 ? 0 : row[nodes[ch].cls];
      fail[t] = ft;
      row[nodes[ch].cls] = t;
    }
  }
  if (max_list >= 65536) {
    return error(Code::kInvalidArgument, "Aho-Corasick: a state has {} outputs; per-payload counts could overflow", max_list);
  }

  // 4. Row offsets with the has-output bit and inline counts; output records in words 0..3 of each row.
  std::vector<uint32_t> exact(nstates, 0), nverify(nstates, 0);
  for (uint32_t s = 0; s < nstates; ++s) {
    for (uint32_t j = 0; j < list_len[s]; ++j) (out_list[list_off[s] + j] & kVerify ? nverify[s] : exact[s])++;
  }
  auto encode = [&](uint32_t t) -> uint32_t {
    if (list_len[t] == 0) return t * W;
    uint32_t inl = (nverify[t] == 0 && exact[t] < kInlineEscape) ? exact[t] : kInlineEscape;
    return kHasOutput | inl << kRowBits | t * W;
  };
  for (uint32_t s = 0; s < nstates; ++s) {
    uint32_t* row = &d.trans_[uint64_t{s} * W];
    for (uint32_t c = kRowHeader; c < kRowHeader + ncls; ++c) row[c] = encode(row[c]);
    if (list_len[s] == 0) continue;  // header stays zero
    StateOut o{0, static_cast<uint32_t>(d.out_ids_.size()), list_len[s], 0};
    for (uint32_t j = 0; j < list_len[s]; ++j) {
      uint32_t e = out_list[list_off[s] + j];
      d.out_ids_.push_back(e);
      if (e & kVerify) ++o.verify_n; else ++o.exact_count;
    }
    for (uint32_t j = 0; j < list_len[s]; ++j) {
      if (out_list[list_off[s] + j] & kVerify) d.out_ids_.push_back(out_list[list_off[s] + j]);
    }
    std::memcpy(row, &o, sizeof o);
    ++d.stats_.output_states;
  }
  if (d.out_ids_.empty()) d.out_ids_.push_back(0);  // never empty (device buffers of size 0 are invalid)

  // 5. Raw pattern bytes for verification.
  d.pat_off_.reserve(patterns.size() + 1);
  for (const auto& p : patterns) {
    d.pat_off_.push_back(static_cast<uint32_t>(d.pat_bytes_.size()));
    d.pat_bytes_.insert(d.pat_bytes_.end(), p.bytes.begin(), p.bytes.end());
  }
  d.pat_off_.push_back(static_cast<uint32_t>(d.pat_bytes_.size()));

  d.stats_.patterns = static_cast<uint32_t>(patterns.size());
  d.stats_.states = static_cast<uint32_t>(nstates);
  d.stats_.classes = ncls;
  d.stats_.out_entries = d.out_ids_.size();
  d.stats_.table_bytes = d.trans_words_ * 4 + d.out_ids_.size() * 4 +
                         d.pat_bytes_.size() + d.pat_off_.size() * 4;
  if (d.stats_.table_bytes > max_table_bytes) {
    return error(Code::kInvalidArgument, "Aho-Corasick: tables of {} MB exceed the limit of {} MB",
                 d.stats_.table_bytes >> 20, max_table_bytes >> 20);
  }
  if (!state_order.train.empty()) {
    d.reorder_by_visits(state_order);
    if (!d.trans_) return error(Code::kInternal, "Aho-Corasick: cannot allocate {} MB", (nstates * W * 4) >> 20);
  }
  d.stats_.build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return d;
}

NaiveMatcher::NaiveMatcher(const std::vector<Pattern>& patterns) : patterns_(&patterns) {
  for (uint32_t id = 0; id < patterns.size(); ++id) {
    if (!patterns[id].bytes.empty()) by_first_[fold_ascii(static_cast<uint8_t>(patterns[id].bytes[0]))].push_back(id);
  }
}

uint32_t NaiveMatcher::scan(const uint8_t* p, uint32_t len, uint32_t* ids, uint32_t k) const {
  std::vector<std::pair<uint32_t, uint32_t>> m;  // (end offset, id)
  for (uint32_t start = 0; start < len; ++start) {
    for (uint32_t id : by_first_[fold_ascii(p[start])]) {
      const Pattern& pat = (*patterns_)[id];
      if (pat.bytes.size() > len - start) continue;
      bool ok = true;
      for (size_t i = 0; i < pat.bytes.size() && ok; ++i) {
        uint8_t x = p[start + i], y = static_cast<uint8_t>(pat.bytes[i]);
        ok = pat.nocase ? fold_ascii(x) == fold_ascii(y) : x == y;
      }
      if (ok) m.emplace_back(start + static_cast<uint32_t>(pat.bytes.size()), id);
    }
  }
  std::sort(m.begin(), m.end());
  for (uint32_t i = 0; i < k && i < m.size(); ++i) ids[i] = m[i].second;
  return static_cast<uint32_t>(m.size());
}

}  // namespace hpr::dpi
