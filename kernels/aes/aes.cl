// AES-128-CBC per-connection packet encryption, one work-item per packet (paper §3.2.4, §3.3).
// Implements the packet rule of kernels/aes/aes_app.hpp exactly (key slot per flow, derived or
// carried IV, CBC-CS2 tail, payloads < 16 bytes left in clear); the host prepends hpr_desc and the
// generated tables aes_te0 (T-table, big-endian words) and aes_sbox. Table AES: the state is four
// big-endian column words (rijndael-alg-fst layout); Te1..Te3 are rotations of Te0.
// Build option HPR_AES_IV_CARRIED: the first 16 payload bytes are the IV.
// Keys: the host stages, per batch, the key slots of the batch's flows (192 bytes each: the 176-byte
// schedule, then le64 counter[2]; kernels/aes/key_table.hpp) and rewrites desc[i].flow to the packet's
// slot in that array (>= count: no key). epoch: the run's key epoch as four big-endian words.

#define AES_ENCRYPTED 0u
#define AES_SHORT 1u
#define AES_KEY_MISSING 2u
#define AES_EMPTY 3u

#define TE0(x) aes_te0[(x)]
#define TE1(x) rotate(aes_te0[(x)], 24u)
#define TE2(x) rotate(aes_te0[(x)], 16u)
#define TE3(x) rotate(aes_te0[(x)], 8u)

static uint ld_be(__global const uchar* p) {
  return ((uint)p[0] << 24) | ((uint)p[1] << 16) | ((uint)p[2] << 8) | (uint)p[3];
}
static void st_be(__global uchar* p, uint v) {
  p[0] = (uchar)(v >> 24); p[1] = (uchar)(v >> 16); p[2] = (uchar)(v >> 8); p[3] = (uchar)v;
}

static uint aes_last(uint a, uint b, uint c, uint d) {
  return ((uint)aes_sbox[a >> 24] << 24) | ((uint)aes_sbox[(b >> 16) & 255] << 16) |
         ((uint)aes_sbox[(c >> 8) & 255] << 8) | (uint)aes_sbox[d & 255];
}

static void aes_encrypt(const uint* rk, uint* s) {
  uint s0 = s[0] ^ rk[0], s1 = s[1] ^ rk[1], s2 = s[2] ^ rk[2], s3 = s[3] ^ rk[3];
  for (int r = 1; r < 10; ++r) {
    const uint* k = rk + 4 * r;
    uint t0 = TE0(s0 >> 24) ^ TE1((s1 >> 16) & 255) ^ TE2((s2 >> 8) & 255) ^ TE3(s3 & 255) ^ k[0];
    uint t1 = TE0(s1 >> 24) ^ TE1((s2 >> 16) & 255) ^ TE2((s3 >> 8) & 255) ^ TE3(s0 & 255) ^ k[1];
    uint t2 = TE0(s2 >> 24) ^ TE1((s3 >> 16) & 255) ^ TE2((s0 >> 8) & 255) ^ TE3(s1 & 255) ^ k[2];
    uint t3 = TE0(s3 >> 24) ^ TE1((s0 >> 16) & 255) ^ TE2((s1 >> 8) & 255) ^ TE3(s2 & 255) ^ k[3];
    s0 = t0; s1 = t1; s2 = t2; s3 = t3;
  }
  s[0] = aes_last(s0, s1, s2, s3) ^ rk[40];
  s[1] = aes_last(s1, s2, s3, s0) ^ rk[41];
  s[2] = aes_last(s2, s3, s0, s1) ^ rk[42];
  s[3] = aes_last(s3, s0, s1, s2) ^ rk[43];
}

static uint bswap32(uint v) { return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24); }

__kernel void aes_cbc(__global const hpr_desc* desc, uint n, __global uchar* pkts, __global uint* out,
                      __global const uchar* slots, uint count, uint4 epoch) {
  uint i = get_global_id(0);
  if (i >= n) return;
  const uint flow = desc[i].flow;
  const uint len = desc[i].len;
  if (flow >= count) { out[i] = AES_KEY_MISSING; return; }
  __global uchar* data = pkts + desc[i].off;
  uint m = len;
  uint chain[4];
#ifdef HPR_AES_IV_CARRIED
  if (len == 0) { out[i] = AES_EMPTY; return; }
  if (len < 16) { out[i] = AES_SHORT; return; }
  m = len - 16;
#endif
  if (m == 0) { out[i] = AES_EMPTY; return; }
  if (m < 16) { out[i] = AES_SHORT; return; }

  uint rk[44];
  __global const uchar* sched = slots + 192u * flow;
  for (int w = 0; w < 44; ++w) rk[w] = ld_be(sched + 4 * w);

#ifdef HPR_AES_IV_CARRIED
  for (int w = 0; w < 4; ++w) chain[w] = ld_be(data + 4 * w);
  data += 16;
#else
  // IV = AES_K(epoch ^ (le64(counter[seq >> 31]) || le64(seq)))
  const uint seq = desc[i].seq;
  __global const uchar* ctr = sched + 176u + 8u * (seq >> 31);
  chain[0] = ld_be(ctr) ^ epoch.s0;
  chain[1] = ld_be(ctr + 4) ^ epoch.s1;
  chain[2] = bswap32(seq) ^ epoch.s2;
  chain[3] = epoch.s3;
  aes_encrypt(rk, chain);
#endif
  const uint full = m / 16;
  const uint tail = m % 16;
  for (uint b = 0; b < full; ++b) {
    __global uchar* p = data + 16 * b;
    for (int w = 0; w < 4; ++w) chain[w] ^= ld_be(p + 4 * w);
    aes_encrypt(rk, chain);
    for (int w = 0; w < 4; ++w) st_be(p + 4 * w, chain[w]);
  }
  if (tail != 0) {
    // CBC-CS2: Cn = E(C(n-1) ^ (Pn* || 0)); output ... Cn || first `tail` bytes of C(n-1).
    __global uchar* last_full = data + 16 * (full - 1);
    __global uchar* part = data + 16 * full;
    uchar pbytes[16];
    for (uint k = 0; k < 16; ++k) pbytes[k] = k < tail ? part[k] : (uchar)0;
    uint cprev[4] = {chain[0], chain[1], chain[2], chain[3]};
    for (int w = 0; w < 4; ++w)
      chain[w] ^= ((uint)pbytes[4 * w] << 24) | ((uint)pbytes[4 * w + 1] << 16) | ((uint)pbytes[4 * w + 2] << 8) |
                  (uint)pbytes[4 * w + 3];
    aes_encrypt(rk, chain);
    for (int w = 0; w < 4; ++w) st_be(last_full + 4 * w, chain[w]);
    for (uint k = 0; k < tail; ++k) part[k] = (uchar)(cprev[k / 4] >> (24 - 8 * (k % 4)));
  }
  out[i] = AES_ENCRYPTED;
}
