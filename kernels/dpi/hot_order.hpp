#pragma once
// Training payloads for the automaton's visit order (AcOrder in ac.hpp; DpiConfig::automaton_train).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hpr/status.hpp"

namespace hpr::dpi {

// The L4 payloads of a pcap file, or of every capture in a directory (list_captures order), in
// file order; frames that do not parse or carry no payload are skipped, and so are unreadable files
// of a directory (as the bench's capture workload). `what` names the setting in errors.
// Errors: kNotFound (no such file or directory), kInvalidArgument (a file given by name that is
// not a capture, or no payload at all).
Result<std::vector<std::vector<uint8_t>>> load_payloads(const std::string& path, std::string_view what);

// Spans over `payloads[from, to)` for AcOrder::train.
std::vector<std::span<const uint8_t>> payload_spans(const std::vector<std::vector<uint8_t>>& payloads, size_t from = 0,
                                                    size_t to = SIZE_MAX);

}  // namespace hpr::dpi
