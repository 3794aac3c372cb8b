#pragma once
// Where a packet's descriptor waits while it goes through a lane (issue 12: "hand over buffer references, not 64-byte
// descriptors"). The dispatcher copies a packet's descriptor into the store once, as it enqueues it; from there the
// lane queue, the batch, the executor, the completion ring and egress pass only its 8-byte reference (a Packet*), as
// VPP's frames pass buffer indices. Egress gives the reference back once it has sent or dropped the packet.
//
// Threads: the dispatcher takes (and gives back what it drops on the way); egress gives back, through a ring that
// the dispatcher empties when its own stack runs dry. The store holds as many descriptors as the lanes can hold
// between them (queues, batches, executor slots, completion rings) and egress one burst, so take() runs dry only
// when those are full anyway.
#include <cstddef>
#include <memory>

#include "runtime/packet.hpp"
#include "runtime/ring.hpp"

namespace hpr {

class PacketStore {
 public:
  explicit PacketStore(size_t n) : n_(n), slab_(new Packet[n]), free_(new Packet*[n]), returned_(n) {
    for (size_t i = 0; i < n; ++i) free_[i] = &slab_[n - 1 - i];
    nfree_ = n;
  }
  size_t size() const { return n_; }
  // Lent and not given back. Only while no thread takes or gives back (after the run).
  size_t in_use() const { return n_ - nfree_ - returned_.size(); }
  // Dispatcher: a reference holding a copy of `p`, or nullptr when every descriptor is in use.
  Packet* take(const Packet& p) {
    if (nfree_ == 0) nfree_ = returned_.pop_burst(free_.get(), n_);
    if (nfree_ == 0) return nullptr;
    Packet* r = free_[--nfree_];
    *r = p;
    return r;
  }
  // Dispatcher: a reference it took and did not hand on.
  void give_back_here(Packet* r) { free_[nfree_++] = r; }
  // Egress: references it is done with (never more than the store holds, so the ring has room).
  void give_back(Packet* const* r, size_t n) { returned_.push_burst(r, n); }

 private:
  const size_t n_;
  std::unique_ptr<Packet[]> slab_;
  std::unique_ptr<Packet*[]> free_;  // the dispatcher's stack
  size_t nfree_ = 0;
  SpscRing<Packet*> returned_;       // egress → dispatcher
};

}  // namespace hpr
