// DPI: Aho-Corasick DFA over each packet's L4 payload, thread per packet (paper §3.2.2).
// Table layout and match semantics: kernels/dpi/ac.hpp. Must give the same words as
// hpr::dpi::ac_scan (the native path) for every packet.
#ifndef K_MATCHES
#define K_MATCHES 8
#endif
#define ROW_BITS 27
#define HAS_OUTPUT 0x80000000u
#define ROW_MASK ((1u << ROW_BITS) - 1)
#define INLINE_ESCAPE ((HAS_OUTPUT - 1) >> ROW_BITS)
#define VERIFY 0x80000000u

__kernel void dpi_match(__global const hpr_desc* desc, uint n, __global const uchar* pkts, __global uint* out,
                        __global const uchar* byte_class, __global const uint* trans, __global const uint* out_ids, __global const uchar* pat_bytes, __global const uint* pat_off) {
  uint gid = get_global_id(0);
  if (gid >= n) return;
  hpr_desc d = desc[gid];
  __global const uchar* p = pkts + d.off;
  uint ids[K_MATCHES];
  uint row = 0, count = 0, nid = 0;
  for (uint i = 0; i < d.len; ++i) {
    uint e = trans[row + byte_class[p[i]]];
    row = e & ROW_MASK;
    if (e & HAS_OUTPUT) {
      uint inl = (e & ~HAS_OUTPUT) >> ROW_BITS;
      if (nid >= K_MATCHES && inl != INLINE_ESCAPE) {  // inline exact count, no header read
        count += inl;
        continue;
      }
      uint4 o = vload4(0, trans + row);  // row header: (exact_count, list_off, list_len, verify_n)
      uint j = 0, jend = o.z;
      if (nid >= K_MATCHES) {  // ids full: exact count, then only the entries that need verification
        count += o.x;
        j = o.z;
        jend = o.z + o.w;
      }
      for (; j < jend; ++j) {
        uint id = out_ids[o.y + j];
        if (id & VERIFY) {
          id &= ~VERIFY;
          uint b = pat_off[id], len = pat_off[id + 1] - b;
          __global const uchar* s = p + i + 1 - len;
          uint m = 0;
          while (m < len && s[m] == pat_bytes[b + m]) ++m;
          if (m != len) continue;
        }
        ++count;
        if (nid < K_MATCHES) ids[nid++] = id;
      }
    }
  }
  __global uint* r = out + (size_t)gid * (K_MATCHES + 1);
  r[0] = count;
  for (uint j = 0; j < K_MATCHES; ++j) r[1 + j] = j < nid ? ids[j] : 0xffffffffu;
}
