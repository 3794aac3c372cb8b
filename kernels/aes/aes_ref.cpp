// Native AES-128-CBC: table AES (no AES-NI), AES-NI one stream, and AES-NI / VAES multi-buffer
// (8 and 16 independent CBC streams). All paths implement the packet rule of aes_app.hpp.
#include <cpuid.h>
#include <immintrin.h>

#include <cstring>

#include "kernels/aes/aes_app.hpp"
#include "kernels/aes/aes_tables.hpp"

namespace hpr::kernels::aes {
namespace {

constexpr const Tables& T = kTables;

inline uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
inline void put_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24); p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8); p[3] = static_cast<uint8_t>(v);
}
inline uint32_t ror32(uint32_t x, int s) { return (x >> s) | (x << (32 - s)); }

// ------------------------------------------------------------------ table AES (fallback, oracle)
void encrypt_block_table(const RoundKeys& key, const uint8_t in[16], uint8_t out[16]) {
  const uint8_t* rk = key.bytes;
  uint32_t s0 = be32(in) ^ be32(rk), s1 = be32(in + 4) ^ be32(rk + 4);
  uint32_t s2 = be32(in + 8) ^ be32(rk + 8), s3 = be32(in + 12) ^ be32(rk + 12);
  for (int r = 1; r < 10; ++r) {
    const uint8_t* k = rk + 16 * r;
    uint32_t t0 = T.te0[s0 >> 24] ^ ror32(T.te0[(s1 >> 16) & 255], 8) ^ ror32(T.te0[(s2 >> 8) & 255], 16) ^
                  ror32(T.te0[s3 & 255], 24) ^ be32(k);
    uint32_t t1 = T.te0[s1 >> 24] ^ ror32(T.te0[(s2 >> 16) & 255], 8) ^ ror32(T.te0[(s3 >> 8) & 255], 16) ^
                  ror32(T.te0[s0 & 255], 24) ^ be32(k + 4);
    uint32_t t2 = T.te0[s2 >> 24] ^ ror32(T.te0[(s3 >> 16) & 255], 8) ^ ror32(T.te0[(s0 >> 8) & 255], 16) ^
                  ror32(T.te0[s1 & 255], 24) ^ be32(k + 8);
    uint32_t t3 = T.te0[s3 >> 24] ^ ror32(T.te0[(s0 >> 16) & 255], 8) ^ ror32(T.te0[(s1 >> 8) & 255], 16) ^
                  ror32(T.te0[s2 & 255], 24) ^ be32(k + 12);
    s0 = t0; s1 = t1; s2 = t2; s3 = t3;
  }
  const uint8_t* k = rk + 160;
  auto last = [&](uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    return (uint32_t{T.sbox[a >> 24]} << 24) | (uint32_t{T.sbox[(b >> 16) & 255]} << 16) |
           (uint32_t{T.sbox[(c >> 8) & 255]} << 8) | uint32_t{T.sbox[d & 255]};
  };
  put_be32(out, last(s0, s1, s2, s3) ^ be32(k));
  put_be32(out + 4, last(s1, s2, s3, s0) ^ be32(k + 4));
  put_be32(out + 8, last(s2, s3, s0, s1) ^ be32(k + 8));
  put_be32(out + 12, last(s3, s0, s1, s2) ^ be32(k + 12));
}

// Byte-oriented inverse cipher (FIPS-197 §5.3); only the tests' decrypt uses it without AES-NI.
void decrypt_block_table(const RoundKeys& key, const uint8_t in[16], uint8_t out[16]) {
  uint8_t s[16];
  for (int i = 0; i < 16; ++i) s[i] = in[i] ^ key.bytes[160 + i];
  for (int r = 9; r >= 0; --r) {
    uint8_t t[16];
    for (int c = 0; c < 4; ++c)
      for (int row = 0; row < 4; ++row) t[row + 4 * c] = T.inv_sbox[s[row + 4 * ((c - row + 4) % 4)]];
    for (int i = 0; i < 16; ++i) t[i] ^= key.bytes[16 * r + i];
    if (r > 0) {
      for (int c = 0; c < 4; ++c) {
        uint8_t a0 = t[4 * c], a1 = t[4 * c + 1], a2 = t[4 * c + 2], a3 = t[4 * c + 3];
        s[4 * c] = gmul(a0, 14) ^ gmul(a1, 11) ^ gmul(a2, 13) ^ gmul(a3, 9);
        s[4 * c + 1] = gmul(a0, 9) ^ gmul(a1, 14) ^ gmul(a2, 11) ^ gmul(a3, 13);
        s[4 * c + 2] = gmul(a0, 13) ^ gmul(a1, 9) ^ gmul(a2, 14) ^ gmul(a3, 11);
        s[4 * c + 3] = gmul(a0, 11) ^ gmul(a1, 13) ^ gmul(a2, 9) ^ gmul(a3, 14);
      }
    } else {
      std::memcpy(s, t, 16);
    }
  }
  std::memcpy(out, s, 16);
}

// chain: IV in, last ciphertext block out. In place allowed.
void cbc_table(const RoundKeys& rk, uint8_t chain[16], const uint8_t* in, uint8_t* out, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b) {
    uint8_t x[16];
    for (int i = 0; i < 16; ++i) x[i] = in[16 * b + i] ^ chain[i];
    encrypt_block_table(rk, x, chain);
    std::memcpy(out + 16 * b, chain, 16);
  }
}

// ------------------------------------------------------------------ AES-NI
#define HPR_AESNI __attribute__((target("aes,sse4.2")))
#define HPR_VAES __attribute__((target("vaes,avx2,aes")))
#define HPR_VAES512 __attribute__((target("vaes,avx512f,avx2,aes")))

bool cpu_aesni() {
  static const bool v = __builtin_cpu_supports("aes");
  return v;
}
bool cpu_vaes() {
  // VAES is CPUID leaf 7, ECX bit 9. Read directly: clang before 15 has no "vaes" in __builtin_cpu_supports.
  static const bool v = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    return (c & (1u << 9)) != 0 && __builtin_cpu_supports("avx2") && cpu_aesni();
  }();
  return v;
}
bool cpu_vaes512() {
  // GCC's avx512f check includes the OS saving the zmm and mask state (XCR0).
  static const bool v = cpu_vaes() && __builtin_cpu_supports("avx512f");
  return v;
}

HPR_AESNI void cbc_aesni(const RoundKeys& key, uint8_t chain_io[16], const uint8_t* in, uint8_t* out,
                         size_t nblocks) {
  const __m128i* rk = reinterpret_cast<const __m128i*>(key.bytes);
  __m128i k[11];
  for (int r = 0; r < 11; ++r) k[r] = _mm_load_si128(rk + r);
  __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(chain_io));
  for (size_t b = 0; b < nblocks; ++b) {
    __m128i x = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16 * b)), c);
    x = _mm_xor_si128(x, k[0]);
    for (int r = 1; r < 10; ++r) x = _mm_aesenc_si128(x, k[r]);
    c = _mm_aesenclast_si128(x, k[10]);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * b), c);
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(chain_io), c);
}

// FIPS-197 key expansion with AESKEYGENASSIST (Intel AES-NI white paper, Gueron 2010, fig. 25).
HPR_AESNI inline __m128i expand_step(__m128i k, __m128i assist) {
  assist = _mm_shuffle_epi32(assist, 0xff);
  k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
  k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
  k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
  return _mm_xor_si128(k, assist);
}

HPR_AESNI RoundKeys expand_key_aesni(const Key& key) {
  RoundKeys rk;
  __m128i* out = reinterpret_cast<__m128i*>(rk.bytes);
  __m128i k = _mm_loadu_si128(reinterpret_cast<const __m128i*>(key.data()));
  _mm_store_si128(out, k);
#define HPR_EXPAND(r, rcon)                               \
  k = expand_step(k, _mm_aeskeygenassist_si128(k, rcon)); \
  _mm_store_si128(out + (r), k)
  HPR_EXPAND(1, 0x01);
  HPR_EXPAND(2, 0x02);
  HPR_EXPAND(3, 0x04);
  HPR_EXPAND(4, 0x08);
  HPR_EXPAND(5, 0x10);
  HPR_EXPAND(6, 0x20);
  HPR_EXPAND(7, 0x40);
  HPR_EXPAND(8, 0x80);
  HPR_EXPAND(9, 0x1b);
  HPR_EXPAND(10, 0x36);
#undef HPR_EXPAND
  return rk;
}

// CBC decryption is parallel over blocks: 4 blocks in flight.
HPR_AESNI void cbc_decrypt_aesni(const RoundKeys& ek, const uint8_t iv[16], const uint8_t* in, uint8_t* out,
                                 size_t nblocks) {
  __m128i dk[11];
  dk[0] = _mm_load_si128(reinterpret_cast<const __m128i*>(ek.bytes + 160));
  for (int r = 1; r < 10; ++r) dk[r] = _mm_aesimc_si128(_mm_load_si128(reinterpret_cast<const __m128i*>(ek.bytes + 16 * (10 - r))));
  dk[10] = _mm_load_si128(reinterpret_cast<const __m128i*>(ek.bytes));
  __m128i prev = _mm_loadu_si128(reinterpret_cast<const __m128i*>(iv));
  size_t b = 0;
  for (; b + 4 <= nblocks; b += 4) {
    __m128i c[4], x[4];
    for (int j = 0; j < 4; ++j) {
      c[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16 * (b + j)));
      x[j] = _mm_xor_si128(c[j], dk[0]);
    }
    for (int r = 1; r < 10; ++r)
      for (int j = 0; j < 4; ++j) x[j] = _mm_aesdec_si128(x[j], dk[r]);
    for (int j = 0; j < 4; ++j) x[j] = _mm_aesdeclast_si128(x[j], dk[10]);
    x[0] = _mm_xor_si128(x[0], prev);
    for (int j = 1; j < 4; ++j) x[j] = _mm_xor_si128(x[j], c[j - 1]);
    prev = c[3];
    for (int j = 0; j < 4; ++j) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * (b + j)), x[j]);
  }
  for (; b < nblocks; ++b) {
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16 * b));
    __m128i x = _mm_xor_si128(c, dk[0]);
    for (int r = 1; r < 10; ++r) x = _mm_aesdec_si128(x, dk[r]);
    x = _mm_xor_si128(_mm_aesdeclast_si128(x, dk[10]), prev);
    prev = c;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * b), x);
  }
}

using CbcFn = void (*)(const RoundKeys&, uint8_t*, const uint8_t*, uint8_t*, size_t);

// ------------------------------------------------------------------ packet rule
// What one packet needs: result, and for kEncrypted the stream (key, first data block, blocks, tail).
struct Job {
  const RoundKeys* rk = nullptr;
  uint8_t* data = nullptr;  // first plaintext byte
  uint32_t full = 0;        // full blocks (>= 1)
  uint32_t tail = 0;        // bytes of the final partial block (0..15)
  uint8_t ctr[16];          // derived mode: the IV input block, epoch xor (le64(counter) || le64(seq))
  bool derived = true;
};

inline PacketResult plan(const KeyTable& keys, IvMode iv, uint32_t flow, uint32_t seq, uint8_t* data, uint32_t len,
                         Job& job) {
  const KeySlot* slot = keys.slot(flow);
  if (slot == nullptr) return kKeyMissing;
  uint32_t m = len;
  if (iv == IvMode::kCarried) {
    if (len == 0) return kEmpty;
    if (len < kBlockBytes) return kShort;
    m = len - kBlockBytes;
  }
  if (m == 0) return kEmpty;
  if (m < kBlockBytes) return kShort;
  job.rk = &slot->rk;
  job.data = iv == IvMode::kCarried ? data + kBlockBytes : data;
  job.full = m / kBlockBytes;
  job.tail = m % kBlockBytes;
  job.derived = iv == IvMode::kDerived;
  if (job.derived) iv_input(keys.epoch(), KeyTable::counter(*slot, seq), seq, job.ctr);
  return kEncrypted;
}

// CBC-CS2 fix-up after the zero-padded last block was encrypted to `cn`: C(n-1) moves behind Cn, truncated.
inline void cs2_swap(const Job& job, const uint8_t cn[16]) {
  uint8_t* last_full = job.data + 16 * (job.full - 1);
  uint8_t cprev[16];
  std::memcpy(cprev, last_full, 16);
  std::memcpy(last_full, cn, 16);
  std::memcpy(job.data + 16 * job.full, cprev, job.tail);
}

void run_job(const Job& job, CbcFn cbc) {
  alignas(16) uint8_t chain[16];
  if (job.derived) {
    std::memcpy(chain, job.ctr, 16);
    alignas(16) uint8_t zero[16] = {};
    cbc(*job.rk, zero, chain, chain, 1);  // IV = E_K(ctr)
  } else {
    std::memcpy(chain, job.data - 16, 16);
  }
  cbc(*job.rk, chain, job.data, job.data, job.full);
  if (job.tail != 0) {
    alignas(16) uint8_t pad[16] = {};
    std::memcpy(pad, job.data + 16 * job.full, job.tail);
    cbc(*job.rk, chain, pad, pad, 1);
    cs2_swap(job, pad);
  }
}

inline void put_result(const BatchView& b, uint32_t i, PacketResult r) {
  uint32_t v = r;
  std::memcpy(b.out + 4 * static_cast<size_t>(i), &v, 4);
}

void batch_single(const BatchView& b, const KeyTable& keys, IvMode iv, CbcFn cbc) {
  for (uint32_t i = 0; i < b.n; ++i) {
    const Desc& d = b.desc[i];
    Job job;
    PacketResult r = plan(keys, iv, d.flow, d.seq, b.slice(i), d.len, job);
    if (r == kEncrypted) run_job(job, cbc);
    put_result(b, i, r);
  }
}

// ------------------------------------------------------------------ multi-buffer lane scheduler
// L lanes, each running one packet's full data blocks in place as one CBC stream. Runs of `min(left)`
// blocks go to the SIMD engine with no per-block bookkeeping; a lane that finishes is refilled from the
// batch, so packets of mixed sizes share the lanes. The engine returns each time a lane finishes, so the
// work around it is kept to one return per packet:
//   * derived IVs are computed kQ packets ahead, independent single blocks 8 at a time (ecb_x8), not as a
//     one-block segment of the lane (which cost a return of its own, with the lanes out of step on a mix);
//   * CS2 tails are queued when a lane's data ends (the padded tail xor the last ciphertext block) and
//     encrypted kQ at a time, then swapped, again not as a lane segment;
//   * packets of >= kLongBytes go first, the rest after, so the lanes drain at the end of the batch on
//     short packets instead of idling beside one long one.
// Every packet is planned (and its result written) exactly once; the bytes are those of the packet rule.
constexpr uint32_t kLongBytes = 256;

// Independent blocks, each under its own key, in place: blk[i] = AES_{rk[i]}(blk[i]).
HPR_AESNI void ecb_x8(const RoundKeys* const* rk, uint8_t* const* blk, int n) {
  for (int g = 0; g < n; g += 8) {
    const int m = n - g < 8 ? n - g : 8;
    __m128i x[8];
    const __m128i* k[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      const int j = g + (i < m ? i : 0);
      k[i] = reinterpret_cast<const __m128i*>(rk[j]->bytes);
      x[i] = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[j])), _mm_load_si128(k[i]));
    }
#pragma GCC unroll 9
    for (int r = 1; r < 10; ++r)
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) x[i] = _mm_aesenc_si128(x[i], _mm_load_si128(k[i] + r));
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) x[i] = _mm_aesenclast_si128(x[i], _mm_load_si128(k[i] + 10));
    for (int i = 0; i < m; ++i) _mm_storeu_si128(reinterpret_cast<__m128i*>(blk[g + i]), x[i]);
  }
}

// out = (the `tail` bytes at p, zero padded) xor chain, 0 < tail < 16, with 16-byte loads and one store: the
// 16 bytes ending at the tail's end lie in the packet (m > 16), and a pshufb moves the tail down and zeroes
// the rest.
HPR_AESNI void pad_tail(const uint8_t* p, uint32_t tail, const uint8_t chain[16], uint8_t out[16]) {
  static constexpr uint8_t kIdx[32] = {0,    1,    2,    3,    4,    5,    6,    7,    8,    9,    10,
                                       11,   12,   13,   14,   15,   0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                       0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + tail - 16));
  const __m128i idx = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIdx + 16 - tail));
  const __m128i t = _mm_xor_si128(_mm_shuffle_epi8(v, idx), _mm_loadu_si128(reinterpret_cast<const __m128i*>(chain)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), t);
}

template <int L>
struct Lanes {
  static constexpr int kQ = 16;      // packets planned (IVs derived) ahead; tails encrypted together
  alignas(64) uint8_t chain[L][16];  // CBC chaining value; after the engine, the last ciphertext block
  alignas(64) uint8_t dummy[L][16];  // idle lanes spin here
  uint8_t* p[L];
  uint32_t stride[L];
  uint32_t left[L];
  bool busy[L];
  Job job[L];
  Job ready[kQ];                     // planned; ctr holds the IV
  int nready = 0, rpos = 0;
  Job tails[kQ];
  alignas(16) uint8_t tbuf[kQ][16];  // (padded tail) xor C(n-1), then its ciphertext Cn
  int ntails = 0;
  const BatchView& b;
  const KeyTable& keys;
  IvMode iv;
  uint32_t next = 0;
  int pass = 0;                      // 0: packets of >= kLongBytes, 1: the rest
  int active = 0;

  Lanes(const BatchView& batch, const KeyTable& k, IvMode mode) : b(batch), keys(k), iv(mode) {}

  bool take(uint32_t& i) {
    for (; pass < 2; ++pass, next = 0)
      while (next < b.n) {
        const uint32_t j = next++;
        if ((b.desc[j].len >= kLongBytes) == (pass == 0)) {
          i = j;
          return true;
        }
      }
    return false;
  }
  // Plans up to kQ packets (writing every result) and derives the IVs of those to encrypt.
  void fill() {
    nready = rpos = 0;
    const RoundKeys* rk[kQ];
    uint8_t* blk[kQ];
    int nd = 0;
    uint32_t i;
    while (nready < kQ && take(i)) {
      const Desc& d = b.desc[i];
      Job& j = ready[nready];
      PacketResult r = plan(keys, iv, d.flow, d.seq, b.slice(i), d.len, j);
      put_result(b, i, r);
      if (r != kEncrypted) continue;
      if (j.derived) {
        rk[nd] = j.rk;
        blk[nd++] = j.ctr;
      } else {
        std::memcpy(j.ctr, j.data - 16, 16);
      }
      ++nready;
    }
    if (nd > 0) ecb_x8(rk, blk, nd);
  }
  template <class SetKey>
  void load(int l, SetKey&& set_key) {
    if (rpos == nready) fill();
    if (rpos == nready) {
      busy[l] = false;
      p[l] = dummy[l];
      stride[l] = 0;
      left[l] = UINT32_MAX;
      return;
    }
    const Job& j = ready[rpos++];
    std::memcpy(chain[l], j.ctr, 16);  // from the queue, not from the fresh copy (a store-forwarding stall)
    job[l] = j;
    set_key(l, *j.rk);
    p[l] = job[l].data;
    left[l] = job[l].full;
    stride[l] = 16;
    busy[l] = true;
    ++active;
  }
  void flush_tails() {
    const RoundKeys* rk[kQ];
    uint8_t* blk[kQ];
    for (int t = 0; t < ntails; ++t) {
      rk[t] = tails[t].rk;
      blk[t] = tbuf[t];
    }
    ecb_x8(rk, blk, ntails);
    for (int t = 0; t < ntails; ++t) cs2_swap(tails[t], tbuf[t]);
    ntails = 0;
  }
  // Lane l's data blocks are done (chain[l] = C(n-1)): queue its CS2 tail, refill it.
  template <class SetKey>
  void finish(int l, SetKey&& set_key) {
    const Job& j = job[l];
    if (j.tail != 0) {
      pad_tail(j.data + 16 * j.full, j.tail, chain[l], tbuf[ntails]);
      tails[ntails++] = j;
      if (ntails == kQ) flush_tails();
    }
    --active;
    load(l, set_key);
  }
  template <class SetKey, class Engine>
  void run(SetKey&& set_key, Engine&& engine) {
    for (int l = 0; l < L; ++l) load(l, set_key);
    while (active > 0) {
      uint32_t r = UINT32_MAX;
      for (int l = 0; l < L; ++l) r = left[l] < r ? left[l] : r;
      engine(r);
      for (int l = 0; l < L; ++l) {
        if (!busy[l]) continue;
        left[l] -= r;
        if (left[l] == 0) finish(l, set_key);
      }
    }
    flush_tails();
  }
};

HPR_AESNI void engine_x8(Lanes<8>& s, const __m128i* const* rk, uint32_t blocks) {
  constexpr int L = 8;
  __m128i c[L];
  for (int l = 0; l < L; ++l) c[l] = _mm_load_si128(reinterpret_cast<const __m128i*>(s.chain[l]));
  for (uint32_t k = 0; k < blocks; ++k) {
    __m128i x[L];
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l)
      x[l] = _mm_xor_si128(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s.p[l])), c[l]),
                           _mm_load_si128(rk[l]));
#pragma GCC unroll 9
    for (int r = 1; r < 10; ++r)
#pragma GCC unroll 8
      for (int l = 0; l < L; ++l) x[l] = _mm_aesenc_si128(x[l], _mm_load_si128(rk[l] + r));
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l) {
      c[l] = _mm_aesenclast_si128(x[l], _mm_load_si128(rk[l] + 10));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(s.p[l]), c[l]);
      s.p[l] += s.stride[l];
    }
  }
  for (int l = 0; l < L; ++l) _mm_store_si128(reinterpret_cast<__m128i*>(s.chain[l]), c[l]);
}

void batch_aesni_x8(const BatchView& b, const KeyTable& keys, IvMode iv) {
  constexpr int L = 8;
  Lanes<L> s(b, keys, iv);
  static const RoundKeys kZero{};
  const __m128i* rk[L];
  for (int l = 0; l < L; ++l) rk[l] = reinterpret_cast<const __m128i*>(kZero.bytes);
  auto set_key = [&](int l, const RoundKeys& k) { rk[l] = reinterpret_cast<const __m128i*>(k.bytes); };
  s.run(set_key, [&](uint32_t blocks) { engine_x8(s, rk, blocks); });
}

// 16 lanes, two per ymm register; the round keys of each lane pair are interleaved once per packet so
// the inner loop uses plain 256-bit loads.
constexpr int kVaesRegs = 8;
using PairKeys = uint8_t[kVaesRegs][11][32];

HPR_VAES void engine_x16(Lanes<16>& s, const PairKeys& rkp, uint32_t blocks) {
  constexpr int R = kVaesRegs;
  __m256i c[R];
  for (int j = 0; j < R; ++j) c[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.chain[2 * j]));
  for (uint32_t k = 0; k < blocks; ++k) {
    __m256i x[R];
#pragma GCC unroll 8
    for (int j = 0; j < R; ++j) {
      __m256i in = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s.p[2 * j]))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.p[2 * j + 1])), 1);
      x[j] = _mm256_xor_si256(_mm256_xor_si256(in, c[j]),
                              _mm256_load_si256(reinterpret_cast<const __m256i*>(rkp[j][0])));
    }
#pragma GCC unroll 9
    for (int r = 1; r < 10; ++r)
#pragma GCC unroll 8
      for (int j = 0; j < R; ++j)
        x[j] = _mm256_aesenc_epi128(x[j], _mm256_load_si256(reinterpret_cast<const __m256i*>(rkp[j][r])));
#pragma GCC unroll 8
    for (int j = 0; j < R; ++j) {
      c[j] = _mm256_aesenclast_epi128(x[j], _mm256_load_si256(reinterpret_cast<const __m256i*>(rkp[j][10])));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(s.p[2 * j]), _mm256_castsi256_si128(c[j]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(s.p[2 * j + 1]), _mm256_extracti128_si256(c[j], 1));
      s.p[2 * j] += s.stride[2 * j];
      s.p[2 * j + 1] += s.stride[2 * j + 1];
    }
  }
  for (int j = 0; j < R; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(s.chain[2 * j]), c[j]);
}

void batch_vaes_x16(const BatchView& b, const KeyTable& keys, IvMode iv) {
  Lanes<16> s(b, keys, iv);
  alignas(32) PairKeys rkp = {};
  auto set_key = [&](int l, const RoundKeys& k) {
    for (int r = 0; r < 11; ++r) std::memcpy(&rkp[l / 2][r][16 * (l % 2)], k.bytes + 16 * r, 16);
  };
  s.run(set_key, [&](uint32_t blocks) { engine_x16(s, rkp, blocks); });
}

// AVX-512: 4 lanes per zmm (VAES on zmm, AVX512F for the inserts, extracts and the three-way xor), R
// registers, 4R lanes. The round keys of each quad of lanes are interleaved once per packet, as for x16.
template <int R>
using QuadKeys = uint8_t[R][11][64];

// GCC 12's _mm512_extracti32x4_epi32 passes an undefined vector as the unused merge source, which
// -Wmaybe-uninitialized reports at every use (a header false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <int R>
HPR_VAES512 void engine_zmm(Lanes<4 * R>& s, const QuadKeys<R>& rkq, uint32_t blocks) {
  __m512i c[R];
  for (int j = 0; j < R; ++j) c[j] = _mm512_load_si512(s.chain[4 * j]);
  auto in = [&](int l) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.p[l])); };
  auto out = [&](int l, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(s.p[l]), v); };
  for (uint32_t k = 0; k < blocks; ++k) {
    __m512i x[R];
#pragma GCC unroll 8
    for (int j = 0; j < R; ++j) {
      __m512i v = _mm512_castsi128_si512(in(4 * j));
      v = _mm512_inserti32x4(v, in(4 * j + 1), 1);
      v = _mm512_inserti32x4(v, in(4 * j + 2), 2);
      v = _mm512_inserti32x4(v, in(4 * j + 3), 3);
      x[j] = _mm512_ternarylogic_epi32(v, c[j], _mm512_load_si512(rkq[j][0]), 0x96);  // v ^ c ^ k0
    }
#pragma GCC unroll 9
    for (int r = 1; r < 10; ++r)
#pragma GCC unroll 8
      for (int j = 0; j < R; ++j) x[j] = _mm512_aesenc_epi128(x[j], _mm512_load_si512(rkq[j][r]));
#pragma GCC unroll 8
    for (int j = 0; j < R; ++j) {
      c[j] = _mm512_aesenclast_epi128(x[j], _mm512_load_si512(rkq[j][10]));
      out(4 * j, _mm512_castsi512_si128(c[j]));
      out(4 * j + 1, _mm512_extracti32x4_epi32(c[j], 1));
      out(4 * j + 2, _mm512_extracti32x4_epi32(c[j], 2));
      out(4 * j + 3, _mm512_extracti32x4_epi32(c[j], 3));
      for (int q = 0; q < 4; ++q) s.p[4 * j + q] += s.stride[4 * j + q];
    }
  }
  for (int j = 0; j < R; ++j) _mm512_store_si512(s.chain[4 * j], c[j]);
}
#pragma GCC diagnostic pop

template <int R>
void batch_vaes512(const BatchView& b, const KeyTable& keys, IvMode iv) {
  Lanes<4 * R> s(b, keys, iv);
  alignas(64) QuadKeys<R> rkq = {};
  auto set_key = [&](int l, const RoundKeys& k) {
    for (int r = 0; r < 11; ++r) std::memcpy(&rkq[l / 4][r][16 * (l % 4)], k.bytes + 16 * r, 16);
  };
  s.run(set_key, [&](uint32_t blocks) { engine_zmm<R>(s, rkq, blocks); });
}

Impl resolve(Impl impl) {
  // Measured (docs/crypto.md, Zen 4): zmm x16 > zmm x32 on 64 B and the mix (x32 leads by ~4 % at 1514 B only)
  // > ymm x16 > AES-NI x8 at every size.
  if (impl == Impl::kAuto)
    return cpu_vaes512() ? Impl::kVaes512X16
           : cpu_vaes()  ? Impl::kVaesX16
           : cpu_aesni() ? Impl::kAesniX8
                         : Impl::kScalar;
  return impl_supported(impl) ? impl : Impl::kScalar;
}

}  // namespace

Impl auto_impl() { return resolve(Impl::kAuto); }

bool impl_supported(Impl impl) {
  switch (impl) {
    case Impl::kAuto:
    case Impl::kScalar: return true;
    case Impl::kAesni:
    case Impl::kAesniX8: return cpu_aesni();
    case Impl::kVaesX16: return cpu_vaes();
    case Impl::kVaes512X16:
    case Impl::kVaes512X32: return cpu_vaes512();
  }
  return false;
}

std::string_view impl_name(Impl impl) {
  switch (impl) {
    case Impl::kAuto: return "auto";
    case Impl::kScalar: return "scalar";
    case Impl::kAesni: return "aesni";
    case Impl::kAesniX8: return "aesni_x8";
    case Impl::kVaesX16: return "vaes_x16";
    case Impl::kVaes512X16: return "vaes512_x16";
    case Impl::kVaes512X32: return "vaes512_x32";
  }
  return "?";
}

RoundKeys expand_key(const Key& key, Impl impl) {
  if (impl != Impl::kScalar && cpu_aesni()) return expand_key_aesni(key);
  RoundKeys rk{};
  std::memcpy(rk.bytes, key.data(), 16);
  uint8_t rcon = 1;
  for (int i = 4; i < 44; ++i) {
    uint8_t t[4];
    std::memcpy(t, rk.bytes + 4 * (i - 1), 4);
    if (i % 4 == 0) {
      uint8_t t0 = t[0];
      t[0] = static_cast<uint8_t>(T.sbox[t[1]] ^ rcon);
      t[1] = T.sbox[t[2]];
      t[2] = T.sbox[t[3]];
      t[3] = T.sbox[t0];
      rcon = xtime(rcon);
    }
    for (int j = 0; j < 4; ++j) rk.bytes[4 * i + j] = rk.bytes[4 * (i - 4) + j] ^ t[j];
  }
  return rk;
}

void encrypt_block(const RoundKeys& rk, const uint8_t in[16], uint8_t out[16]) { encrypt_block_table(rk, in, out); }

void cbc_encrypt(const RoundKeys& rk, const uint8_t iv[16], const uint8_t* in, uint8_t* out, size_t len, Impl impl) {
  alignas(16) uint8_t chain[16];
  std::memcpy(chain, iv, 16);
  if (resolve(impl) == Impl::kScalar) cbc_table(rk, chain, in, out, len / 16);
  else cbc_aesni(rk, chain, in, out, len / 16);
}

void cbc_decrypt(const Key& key, const uint8_t iv[16], const uint8_t* in, uint8_t* out, size_t len, Impl impl) {
  RoundKeys rk = expand_key(key);
  size_t n = len / 16;
  if (resolve(impl) != Impl::kScalar) {
    cbc_decrypt_aesni(rk, iv, in, out, n);
    return;
  }
  uint8_t prev[16], c[16];
  std::memcpy(prev, iv, 16);
  for (size_t b = 0; b < n; ++b) {
    std::memcpy(c, in + 16 * b, 16);
    decrypt_block_table(rk, c, out + 16 * b);
    for (int i = 0; i < 16; ++i) out[16 * b + i] ^= prev[i];
    std::memcpy(prev, c, 16);
  }
}

void cbc_cs2_decrypt(const Key& key, const uint8_t iv[16], const uint8_t* in, uint8_t* out, size_t len) {
  size_t d = len % 16, full = len / 16;
  if (d == 0 || len < 16) {
    cbc_decrypt(key, iv, in, out, len - d, Impl::kScalar);
    return;
  }
  // in = C1..C(n-2) | Cn | C(n-1)*  (n-1 = full). Undo the swap, recover C(n-1), then plain CBC.
  RoundKeys rk = expand_key(key);
  const uint8_t* cn = in + 16 * (full - 1);
  const uint8_t* cprev_trunc = in + 16 * full;
  uint8_t z[16];  // D(Cn) = (Pn* || 0) ^ C(n-1)
  decrypt_block_table(rk, cn, z);
  uint8_t cprev[16];
  std::memcpy(cprev, cprev_trunc, d);
  std::memcpy(cprev + d, z + d, 16 - d);  // padding was zero, so the rest of z is C(n-1)'s rest
  uint8_t pn[16];
  for (size_t i = 0; i < d; ++i) pn[i] = z[i] ^ cprev[i];
  std::vector<uint8_t> c(in, in + 16 * full);
  std::memcpy(c.data() + 16 * (full - 1), cprev, 16);
  cbc_decrypt(key, iv, c.data(), out, 16 * full, Impl::kScalar);
  std::memcpy(out + 16 * full, pn, d);
}

void iv_input(const KeyEpoch& epoch, uint64_t counter, uint32_t seq, uint8_t out[16]) {
  // le64(counter) || le64(seq) on the little-endian hosts we build for; xor in words, then one 16-byte
  // store (byte stores here stalled the 16-byte load of the block that follows).
  uint64_t e[2];
  std::memcpy(e, epoch.data(), 16);
  const uint64_t words[2] = {counter ^ e[0], uint64_t{seq} ^ e[1]};
  std::memcpy(out, words, 16);
}

std::array<uint8_t, 16> derive_iv(const RoundKeys& rk, const KeyEpoch& epoch, uint64_t counter, uint32_t seq) {
  std::array<uint8_t, 16> iv{};
  uint8_t ctr[16];
  iv_input(epoch, counter, seq, ctr);
  encrypt_block_table(rk, ctr, iv.data());
  return iv;
}

PacketResult encrypt_packet(const KeyTable& keys, IvMode iv, uint32_t flow, uint32_t seq, uint8_t* data,
                            uint32_t len) {
  Job job;
  PacketResult r = plan(keys, iv, flow, seq, data, len, job);
  if (r == kEncrypted) run_job(job, cbc_table);
  return r;
}

void aes_batch(const BatchView& batch, const KeyTable& keys, IvMode iv, Impl impl) {
  switch (resolve(impl)) {
    case Impl::kScalar: batch_single(batch, keys, iv, cbc_table); return;
    case Impl::kAesni: batch_single(batch, keys, iv, cbc_aesni); return;
    case Impl::kAesniX8: batch_aesni_x8(batch, keys, iv); return;
    case Impl::kVaesX16: batch_vaes_x16(batch, keys, iv); return;
    case Impl::kAuto:
    case Impl::kVaes512X16: batch_vaes512<4>(batch, keys, iv); return;
    case Impl::kVaes512X32: batch_vaes512<8>(batch, keys, iv); return;
  }
}

}  // namespace hpr::kernels::aes
