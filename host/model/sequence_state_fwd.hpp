#pragma once
// The saved state of a sequence, declared for Batch (host/model/sequence_state.hpp defines it).

namespace vkf {

struct SequenceState;
struct StateFingerprint;

}  // namespace vkf
