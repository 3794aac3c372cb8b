#pragma once
// Test helpers for the crypto apps: synthetic packets, OpenCL device list, OpenSSL EVP references and
// NIST .rsp parsing. Gathering and device runs use kernels/runner.hpp.
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "hpr/data_dir.hpp"
#include "kernels/aes/aes_app.hpp"
#include "kernels/aes/key_derive.hpp"
#include "kernels/aes/key_source.hpp"
#include "kernels/app.hpp"
#include "kernels/device_batch.hpp"
#include "kernels/runner.hpp"
#include "runtime/flow.hpp"
#include "runtime/packet.hpp"
#include "runtime/parser.hpp"
#include "runtime/pcap_file.hpp"

namespace hpr::test {

inline std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> v;
  for (size_t i = 0; i + 1 < s.size(); i += 2) v.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return v;
}
inline std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) { s += d[p[i] >> 4]; s += d[p[i] & 15]; }
  return s;
}

inline kernels::aes::Key to_key(const std::vector<uint8_t>& v) {
  kernels::aes::Key k{};
  std::memcpy(k.data(), v.data(), 16);
  return k;
}

// The capture tests' keys (device_test, ipsec_mb_test): each connection's key derived from one test master key and
// epoch when the connection starts (AesApp::flow_started), in a table of `capacity` flow ids.
inline Result<kernels::aes::AesKeys> capture_test_keys(uint32_t capacity) {
  return kernels::aes::make_keys(
      {.master_key = "0102030405060708090a0b0c0d0e0f10", .key_epoch = "f0e1d2c3b4a5968778695a4b3c2d1e0f"}, capacity);
}

// The nDPI captures under $HPR_DATA_DIR/pcap/ndpi (.pcap and .pcapng), in name order.
inline std::vector<std::string> ndpi_capture_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(data_path("pcap/ndpi")))
    if (e.path().extension() == ".pcap" || e.path().extension() == ".pcapng") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// Every frame of `files`, parsed, with flow ids and sequence numbers from `table` as the dispatcher gives them; each
// new flow is announced to `app` (aes: its key). `frames` holds the bytes `pkts` point into. Returns the files read
// (a file that cannot be read stops there: the caller's REQUIRE names it through `error`).
inline size_t load_capture_packets(const std::vector<std::string>& files, FlowTable& table, const kernels::App& app,
                                   std::vector<std::vector<uint8_t>>& frames, std::vector<Packet>& pkts,
                                   std::string* error) {
  size_t read = 0;
  for (const auto& f : files) {
    auto cap = load_capture(f);
    if (!cap) {
      *error = f + ": " + cap.status().message();
      return read;
    }
    ++read;
    for (auto& fr : cap->frames) frames.push_back(std::move(fr));
    for (size_t i = pkts.size(); i < frames.size(); ++i) {
      Packet p;
      p.data = frames[i].data();
      p.len = static_cast<uint16_t>(frames[i].size());
      parse(p);
      if (p.drop == DropReason::kNone) {
        FlowKey k = flow_key(p).canonical();
        bool inserted = false;
        p.flow_id = table.lookup_or_insert(k, flow_hash_symmetric(k), 0, &inserted);
        if (inserted) app.flow_started(p.flow_id, k);
        if (p.flow_id != kNoFlow) p.seq = table.state(p.flow_id).next_seq++;
      }
      pkts.push_back(p);
    }
  }
  return read;
}

// Every native AES impl but kAuto; tests run those impl_supported() says this CPU has and skip the others
// with a message.
inline constexpr kernels::aes::Impl kAesImpls[] = {
    kernels::aes::Impl::kScalar,  kernels::aes::Impl::kAesni,      kernels::aes::Impl::kAesniX8,
    kernels::aes::Impl::kVaesX16, kernels::aes::Impl::kVaes512X16, kernels::aes::Impl::kVaes512X32};

// The key of connection numbered_flow(f) (key_derive.hpp) under `master` and `epoch`.
inline kernels::aes::Key numbered_key(const kernels::aes::Key& master, const kernels::aes::KeyEpoch& epoch,
                                      uint32_t f) {
  return kernels::aes::derive_conn_key(master, epoch, kernels::aes::tuple_of(kernels::aes::numbered_flow(f)));
}
// A key table whose slots f < keyed hold connection numbered_flow(f), set in order from IV counter 0: slot f
// has counters {2f, 2f + 1}.
inline std::shared_ptr<kernels::aes::KeyTable> numbered_keys(uint32_t capacity, const kernels::aes::Key& master,
                                                             uint32_t keyed, const kernels::aes::KeyEpoch& epoch = {}) {
  auto t = std::make_shared<kernels::aes::KeyTable>(capacity, epoch, 0);
  for (uint32_t f = 0; f < keyed && f < capacity; ++f) (void)t->set_key(f, numbered_key(master, epoch, f));
  return t;
}
// The IV input block as docs/crypto.md writes it, byte by byte: epoch xor (le64(counter) || le64(seq)).
inline std::vector<uint8_t> iv_block(const kernels::aes::KeyEpoch& epoch, uint64_t counter, uint32_t seq) {
  std::vector<uint8_t> b(16, 0);
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(counter >> (8 * i));
  for (int i = 0; i < 4; ++i) b[8 + i] = static_cast<uint8_t>(seq >> (8 * i));
  for (int i = 0; i < 16; ++i) b[i] ^= epoch[i];
  return b;
}

// Frames of Ethernet + IPv4 + UDP + payload; owns its bytes.
struct Packets {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<Packet> pkts;
  void add(const std::vector<uint8_t>& payload, uint32_t flow, uint32_t seq) {
    std::vector<uint8_t> f(42 + payload.size(), 0);
    f[12] = 0x08; f[13] = 0x00; f[14] = 0x45; f[23] = 17;
    if (!payload.empty()) std::memcpy(f.data() + 42, payload.data(), payload.size());
    frames.push_back(std::move(f));
    Packet p;
    p.flow_id = flow;
    p.seq = seq;
    p.l3 = L3::kIPv4; p.l3_off = 14; p.l4_off = 34; p.l4 = 17;
    p.payload_off = 42;
    p.payload_len = static_cast<uint16_t>(payload.size());
    pkts.push_back(p);
  }
  // Call after the last add (vectors may move).
  std::vector<Packet>& fix() {
    for (size_t i = 0; i < pkts.size(); ++i) {
      pkts[i].data = frames[i].data();
      pkts[i].len = static_cast<uint16_t>(frames[i].size());
    }
    return pkts;
  }
};

inline std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

inline std::vector<cl::Device> all_devices() {
  std::vector<cl::Device> out;
  try {
    std::vector<cl::Platform> ps;
    cl::Platform::get(&ps);
    for (auto& p : ps) {
      std::vector<cl::Device> ds;
      p.getDevices(CL_DEVICE_TYPE_ALL, &ds);
      out.insert(out.end(), ds.begin(), ds.end());
    }
  } catch (const cl::Error&) {
  }
  return out;
}

// ---- OpenSSL references
inline std::vector<uint8_t> evp_md5(const uint8_t* p, size_t n) {
  std::vector<uint8_t> d(16);
  unsigned int len = 0;
  EVP_Digest(p, n, d.data(), &len, EVP_md5(), nullptr);
  return d;
}

// AES-128 encryption with OpenSSL: "cbc" (len % 16 == 0), "cs2" (AES-128-CBC-CTS, CS2), "ecb".
inline std::vector<uint8_t> evp_aes(const char* mode, const uint8_t key[16], const uint8_t iv[16],
                                    const std::vector<uint8_t>& in, bool enc = true) {
  const char* name = std::strcmp(mode, "cs2") == 0 ? "AES-128-CBC-CTS" : std::strcmp(mode, "ecb") == 0 ? "AES-128-ECB" : "AES-128-CBC";
  EVP_CIPHER* c = EVP_CIPHER_fetch(nullptr, name, nullptr);
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  OSSL_PARAM params[2] = {OSSL_PARAM_END, OSSL_PARAM_END};
  if (std::strcmp(mode, "cs2") == 0)
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_CIPHER_PARAM_CTS_MODE, const_cast<char*>("CS2"), 0);
  EVP_CipherInit_ex2(ctx, c, key, std::strcmp(mode, "ecb") == 0 ? nullptr : iv, enc ? 1 : 0, params);
  EVP_CIPHER_CTX_set_padding(ctx, 0);
  std::vector<uint8_t> out(in.size() + 32);
  int n1 = 0, n2 = 0;
  EVP_CipherUpdate(ctx, out.data(), &n1, in.data(), static_cast<int>(in.size()));
  EVP_CipherFinal_ex(ctx, out.data() + n1, &n2);
  out.resize(static_cast<size_t>(n1 + n2));
  EVP_CIPHER_CTX_free(ctx);
  EVP_CIPHER_free(c);
  return out;
}

// ---- NIST CAVS .rsp
struct NistVector {
  std::string file;
  bool encrypt = true;
  int count = 0;
  std::vector<uint8_t> key, iv, pt, ct;
};

inline std::vector<NistVector> load_nist(const std::string& path) {
  std::vector<NistVector> out;
  std::ifstream f(path);
  std::string line;
  bool enc = true;
  NistVector cur;
  bool have = false;
  auto flush = [&] { if (have) out.push_back(cur); have = false; cur = NistVector{}; };
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "[ENCRYPT]") { flush(); enc = true; continue; }
    if (line == "[DECRYPT]") { flush(); enc = false; continue; }
    auto eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    std::string k = line.substr(0, eq), v = line.substr(eq + 3);
    if (k == "COUNT") { flush(); have = true; cur.file = path; cur.encrypt = enc; cur.count = std::stoi(v); }
    else if (k == "KEY") cur.key = unhex(v);
    else if (k == "IV") cur.iv = unhex(v);
    else if (k == "PLAINTEXT") cur.pt = unhex(v);
    else if (k == "CIPHERTEXT") cur.ct = unhex(v);
  }
  flush();
  return out;
}

inline std::vector<NistVector> load_all_nist() {
  std::vector<NistVector> all;
  for (const char* n : {"CBCGFSbox128.rsp", "CBCKeySbox128.rsp", "CBCMMT128.rsp", "CBCVarKey128.rsp", "CBCVarTxt128.rsp"}) {
    auto v = load_nist(data_path(std::string("vectors/aes-cbc/") + n));
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

}  // namespace hpr::test
