#include "apps/run/prompt_cache.hpp"

#include "base/files.hpp"
#include "host/model/sequence_state.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace vkf::run_cli {

PromptCache restore_prompt_cache(Batch& batch, SequenceId sequence, const std::string& file,
                                 const std::string& model_dir, std::span<const std::uint32_t> prompt) {
    // The model directory's tokenizer.json, as the C API hashes it: a state moves between them.
    PromptCache cache{.file = file,
                      .tokenizer_crc = file_crc32((std::filesystem::path(model_dir) / "tokenizer.json").string())};
    if (!std::filesystem::exists(file)) {
        return cache;
    }
    const std::string what = fmt::format("--prompt-cache '{}'", file);
    const StateFingerprint expected = batch.state_fingerprint(cache.tokenizer_crc);
    const std::uint64_t limit =
        serialized_state_size(expected, batch.max_sequence_tokens(), batch.max_sequence_tokens());
    const std::string bytes = read_file(file, std::max<std::uint64_t>(limit, 1u << 20), what);
    const SequenceState state = parse_state(std::as_bytes(std::span(bytes)), expected, what);
    std::uint32_t common = 0;
    const std::size_t most = std::min(state.tokens.size(), prompt.size() - 1);
    while (common < most && state.tokens[common] == prompt[common]) {
        ++common;
    }
    if (common > 0) {
        batch.restore_state(sequence, state_prefix(state, common));
        cache.used = true;
        cache.tokens = common;
    }
    return cache;
}

void save_prompt_cache(Batch& batch, SequenceId sequence, std::uint32_t prompt_tokens, PromptCache& cache) {
    if (batch.position(sequence) < prompt_tokens) {
        return;  // stopped before the prompt had run
    }
    const SequenceState state = state_prefix(batch.save_state(sequence, cache.tokenizer_crc), prompt_tokens);
    const std::vector<std::byte> bytes = serialize_state(state);
    write_file_atomically(cache.file, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                          fmt::format("--prompt-cache '{}'", cache.file));
    cache.saved = prompt_tokens;
}

nlohmann::ordered_json prompt_cache_json(const PromptCache& cache) {
    return {{"file", cache.file}, {"used", cache.used}, {"tokens", cache.tokens}, {"saved_tokens", cache.saved}};
}

}  // namespace vkf::run_cli
