#pragma once
// systemd's readiness protocol (sd_notify(3)): a datagram "READY=1", "STATUS=...", "STOPPING=1" to the socket named
// by $NOTIFY_SOCKET, which systemd sets for a Type=notify service (packaging/hpr.service). Written here rather than
// linked from libsystemd: the protocol is one datagram, documented as a stable interface for reimplementation, and
// hpr then needs no libsystemd at build or run time. Without $NOTIFY_SOCKET (not under systemd): nothing.
#include <string>

namespace hpr::cli {

// Sends `state` (e.g. "READY=1\nSTATUS=forwarding"). Returns false when $NOTIFY_SOCKET is set but the datagram could
// not be sent (the first failure is logged); true when sent or not under systemd.
bool sd_notify(const std::string& state);

}  // namespace hpr::cli
