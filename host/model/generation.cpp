#include "host/model/generation.hpp"

#include "host/model/batch_session.hpp"

namespace vkf {

double GenerationResult::prefill_tokens_per_second() const {
    return prefill_time.count() > 0 ? prompt_tokens / prefill_time.count() : 0.0;
}

double GenerationResult::decode_tokens_per_second() const {
    const double steps = tokens.empty() ? 0.0 : static_cast<double>(tokens.size() - 1);
    return decode_time.count() > 0 ? steps / decode_time.count() : 0.0;
}

GenerationResult generate(BatchSession& session, std::span<const std::uint32_t> prompt,
                          const GenerationOptions& options) {
    return session.generate(prompt, options);
}

}  // namespace vkf
