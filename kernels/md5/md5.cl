// MD5 (RFC 1321), one work-item per packet (paper §3.3: thread per packet).
// desc/pkts: the shared batch layout (hpr_desc.cl); out: 16 bytes per packet, the digest in RFC byte order.
// Slices start at 16-byte aligned offsets, so full blocks are read as aligned little-endian uints
// (every OpenCL device we target is little endian, as MD5 is).

#define MD5_F(b, c, d) ((d) ^ ((b) & ((c) ^ (d))))
#define MD5_G(b, c, d) ((c) ^ ((d) & ((b) ^ (c))))
#define MD5_H(b, c, d) ((b) ^ (c) ^ (d))
#define MD5_I(b, c, d) ((c) ^ ((b) | ~(d)))
#define MD5_STEP(f, a, b, c, d, x, k, s) (a) = (b) + rotate((a) + f((b), (c), (d)) + (x) + (uint)(k), (uint)(s))

static void md5_compress(uint* st, const uint* w) {
  uint a = st[0], b = st[1], c = st[2], d = st[3];
  MD5_STEP(MD5_F, a, b, c, d, w[0], 0xd76aa478, 7);   MD5_STEP(MD5_F, d, a, b, c, w[1], 0xe8c7b756, 12);
  MD5_STEP(MD5_F, c, d, a, b, w[2], 0x242070db, 17);  MD5_STEP(MD5_F, b, c, d, a, w[3], 0xc1bdceee, 22);
  MD5_STEP(MD5_F, a, b, c, d, w[4], 0xf57c0faf, 7);   MD5_STEP(MD5_F, d, a, b, c, w[5], 0x4787c62a, 12);
  MD5_STEP(MD5_F, c, d, a, b, w[6], 0xa8304613, 17);  MD5_STEP(MD5_F, b, c, d, a, w[7], 0xfd469501, 22);
  MD5_STEP(MD5_F, a, b, c, d, w[8], 0x698098d8, 7);   MD5_STEP(MD5_F, d, a, b, c, w[9], 0x8b44f7af, 12);
  MD5_STEP(MD5_F, c, d, a, b, w[10], 0xffff5bb1, 17); MD5_STEP(MD5_F, b, c, d, a, w[11], 0x895cd7be, 22);
  MD5_STEP(MD5_F, a, b, c, d, w[12], 0x6b901122, 7);  MD5_STEP(MD5_F, d, a, b, c, w[13], 0xfd987193, 12);
  MD5_STEP(MD5_F, c, d, a, b, w[14], 0xa679438e, 17); MD5_STEP(MD5_F, b, c, d, a, w[15], 0x49b40821, 22);
  MD5_STEP(MD5_G, a, b, c, d, w[1], 0xf61e2562, 5);   MD5_STEP(MD5_G, d, a, b, c, w[6], 0xc040b340, 9);
  MD5_STEP(MD5_G, c, d, a, b, w[11], 0x265e5a51, 14); MD5_STEP(MD5_G, b, c, d, a, w[0], 0xe9b6c7aa, 20);
  MD5_STEP(MD5_G, a, b, c, d, w[5], 0xd62f105d, 5);   MD5_STEP(MD5_G, d, a, b, c, w[10], 0x02441453, 9);
  MD5_STEP(MD5_G, c, d, a, b, w[15], 0xd8a1e681, 14); MD5_STEP(MD5_G, b, c, d, a, w[4], 0xe7d3fbc8, 20);
  MD5_STEP(MD5_G, a, b, c, d, w[9], 0x21e1cde6, 5);   MD5_STEP(MD5_G, d, a, b, c, w[14], 0xc33707d6, 9);
  MD5_STEP(MD5_G, c, d, a, b, w[3], 0xf4d50d87, 14);  MD5_STEP(MD5_G, b, c, d, a, w[8], 0x455a14ed, 20);
  MD5_STEP(MD5_G, a, b, c, d, w[13], 0xa9e3e905, 5);  MD5_STEP(MD5_G, d, a, b, c, w[2], 0xfcefa3f8, 9);
  MD5_STEP(MD5_G, c, d, a, b, w[7], 0x676f02d9, 14);  MD5_STEP(MD5_G, b, c, d, a, w[12], 0x8d2a4c8a, 20);
  MD5_STEP(MD5_H, a, b, c, d, w[5], 0xfffa3942, 4);   MD5_STEP(MD5_H, d, a, b, c, w[8], 0x8771f681, 11);
  MD5_STEP(MD5_H, c, d, a, b, w[11], 0x6d9d6122, 16); MD5_STEP(MD5_H, b, c, d, a, w[14], 0xfde5380c, 23);
  MD5_STEP(MD5_H, a, b, c, d, w[1], 0xa4beea44, 4);   MD5_STEP(MD5_H, d, a, b, c, w[4], 0x4bdecfa9, 11);
  MD5_STEP(MD5_H, c, d, a, b, w[7], 0xf6bb4b60, 16);  MD5_STEP(MD5_H, b, c, d, a, w[10], 0xbebfbc70, 23);
  MD5_STEP(MD5_H, a, b, c, d, w[13], 0x289b7ec6, 4);  MD5_STEP(MD5_H, d, a, b, c, w[0], 0xeaa127fa, 11);
  MD5_STEP(MD5_H, c, d, a, b, w[3], 0xd4ef3085, 16);  MD5_STEP(MD5_H, b, c, d, a, w[6], 0x04881d05, 23);
  MD5_STEP(MD5_H, a, b, c, d, w[9], 0xd9d4d039, 4);   MD5_STEP(MD5_H, d, a, b, c, w[12], 0xe6db99e5, 11);
  MD5_STEP(MD5_H, c, d, a, b, w[15], 0x1fa27cf8, 16); MD5_STEP(MD5_H, b, c, d, a, w[2], 0xc4ac5665, 23);
  MD5_STEP(MD5_I, a, b, c, d, w[0], 0xf4292244, 6);   MD5_STEP(MD5_I, d, a, b, c, w[7], 0x432aff97, 10);
  MD5_STEP(MD5_I, c, d, a, b, w[14], 0xab9423a7, 15); MD5_STEP(MD5_I, b, c, d, a, w[5], 0xfc93a039, 21);
  MD5_STEP(MD5_I, a, b, c, d, w[12], 0x655b59c3, 6);  MD5_STEP(MD5_I, d, a, b, c, w[3], 0x8f0ccc92, 10);
  MD5_STEP(MD5_I, c, d, a, b, w[10], 0xffeff47d, 15); MD5_STEP(MD5_I, b, c, d, a, w[1], 0x85845dd1, 21);
  MD5_STEP(MD5_I, a, b, c, d, w[8], 0x6fa87e4f, 6);   MD5_STEP(MD5_I, d, a, b, c, w[15], 0xfe2ce6e0, 10);
  MD5_STEP(MD5_I, c, d, a, b, w[6], 0xa3014314, 15);  MD5_STEP(MD5_I, b, c, d, a, w[13], 0x4e0811a1, 21);
  MD5_STEP(MD5_I, a, b, c, d, w[4], 0xf7537e82, 6);   MD5_STEP(MD5_I, d, a, b, c, w[11], 0xbd3af235, 10);
  MD5_STEP(MD5_I, c, d, a, b, w[2], 0x2ad7d2bb, 15);  MD5_STEP(MD5_I, b, c, d, a, w[9], 0xeb86d391, 21);
  st[0] += a; st[1] += b; st[2] += c; st[3] += d;
}

__kernel void md5(__global const hpr_desc* desc, uint n, __global const uchar* pkts, __global uint* out) {
  uint i = get_global_id(0);
  if (i >= n) return;
  const uint off = desc[i].off;
  const uint len = desc[i].len;
  __global const uint* words = (__global const uint*)(pkts + off);
  uint st[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
  uint w[16];
  const uint full = len / 64;
  for (uint b = 0; b < full; ++b) {
    for (int j = 0; j < 16; ++j) w[j] = words[16 * b + j];
    md5_compress(st, w);
  }
  // Tail: rem bytes, 0x80, zeros, 64-bit bit length; one block, or two when rem > 55.
  const uint rem = len - 64 * full;
  const uint nb = rem > 55 ? 2 : 1;
  __global const uchar* tail = pkts + off + 64 * full;
  for (uint b = 0; b < nb; ++b) {
    for (int j = 0; j < 16; ++j) {
      uint v = 0;
      for (int k = 0; k < 4; ++k) {
        uint pos = 64 * b + 4 * j + k;
        uint byte = pos < rem ? tail[pos] : (pos == rem ? 0x80u : 0u);
        v |= byte << (8 * k);
      }
      w[j] = v;
    }
    if (b == nb - 1) {
      w[14] = len << 3;
      w[15] = len >> 29;
    }
    md5_compress(st, w);
  }
  out[4 * i + 0] = st[0];
  out[4 * i + 1] = st[1];
  out[4 * i + 2] = st[2];
  out[4 * i + 3] = st[3];
}
