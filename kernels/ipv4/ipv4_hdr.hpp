#pragma once
// IPv4 header arithmetic used by the native path, the ICMP builder and the tests: the Internet
// checksum and the RFC 1624 TTL update live in runtime/checksum.hpp (one copy for all of hpr).
#include "runtime/checksum.hpp"
