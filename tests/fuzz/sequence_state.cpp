// Fuzzes saved sequence states (parse_state, host/model/sequence_state.hpp), as
// vkf_session_load_state and vkf-run --prompt-cache read them, against the seeds' fingerprint
// (tests/fuzz/sequence_state_seeds.hpp). An accepted state must serialize back to exactly the
// input: nothing is read that the file does not say, and nothing it says is dropped.

#include "host/model/sequence_state.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tests/fuzz/sequence_state_seeds.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    static const StateFingerprint expected[] = {fuzz::state_fingerprint(), fuzz::state_fingerprint(QuantFormat::Q8_0)};
    const auto bytes = std::as_bytes(std::span(data, size));
    for (const StateFingerprint& f : expected) {
        fuzz::run_parser([&] {
            const SequenceState state = parse_state(bytes, f, "fuzz");
            const std::vector<std::byte> again = serialize_state(state);
            fuzz::check(again.size() == size && std::memcmp(again.data(), data, size) == 0,
                        "an accepted state serializes back to its bytes");
        });
    }
    return 0;
}
