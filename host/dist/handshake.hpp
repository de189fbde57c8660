#pragma once
// The start-up handshake of a layer split: every rank sends its fingerprint
// (fingerprint.hpp) to rank 0, which compares them and answers every rank; on a mismatch every
// rank throws the same vkf::Error naming the ranks that differ, before any of them loads a
// tensor. Otherwise rank 0's answer carries its plan for the run (which layers each rank
// runs, the session's size: the caller's text), the same on every rank.

#include "host/dist/channel.hpp"
#include "host/dist/fingerprint.hpp"

#include <functional>
#include <span>
#include <string>

namespace vkf::dist {

// `make_plan` runs on rank 0 only, once the fingerprints agree; an error it throws is every
// rank's error. Returns the plan on every rank.
std::string handshake(Channel& channel, const Fingerprint& mine,
                      const std::function<std::string(std::span<const Fingerprint>)>& make_plan);

}  // namespace vkf::dist
