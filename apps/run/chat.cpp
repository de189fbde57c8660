#include "apps/run/chat.hpp"

#include "apps/common/app_main.hpp"
#include "apps/common/progress_line.hpp"
#include "apps/common/standard_streams.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/common/streamed_text.hpp"
#include "apps/common/text_source.hpp"
#include "base/error.hpp"
#include "host/model/generation.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

namespace vkf::run_cli {

// --interactive: each line of stdin is a turn; the answers continue one sequence, whose KV
// cache keeps every earlier turn, so a turn costs its own tokens, not the conversation's.
// A line that does not fit what is left of the cache is refused, and the next line read:
// a shorter question may still fit.
int chat(Session& session, const text::Tokenizer& tokenizer, const Options& o,
         const std::vector<std::uint32_t>& stop_ids) {
    const bool tty = ::isatty(0) != 0;
    // The last token of the previous answer: sampled, not yet run through the model.
    std::optional<std::uint32_t> pending;
    std::string line;
    std::size_t offset = 0;  // of the line in stdin, for messages about its bytes
    std::uint64_t line_number = 0;
    for (std::uint64_t turn = 0; app::stop_signal() == 0;) {
        if (tty) {
            fmt::print(stderr, "> ");
        }
        if (!std::getline(std::cin, line)) {
            break;  // the end of stdin, or Ctrl-C while waiting for a line
        }
        ++line_number;
        const std::size_t line_offset = std::exchange(offset, offset + line.size() + 1);
        const std::string_view input = app::without_cr(line);  // a line written on Windows
        // Special tokens (a BOS) only where the conversation starts.
        std::vector<std::uint32_t> ids;
        try {
            app::check_utf8(input, fmt::format("standard input, line {}", line_number), line_offset);
            ids = tokenizer.encode(input, !pending.has_value());
        } catch (const Error& e) {  // a bad line (not UTF-8) ends no conversation
            fmt::print(stderr, "vkf-run: {}\n", e.what());
            continue;
        }
        if (pending) {
            ids.insert(ids.begin(), *pending);
        }
        if (ids.empty()) {
            continue;
        }
        const std::uint64_t room = std::uint64_t{session.max_tokens()} - session.position();
        if (ids.size() + 1 > room) {
            fmt::print(stderr,
                       "vkf-run: line {} ({} tokens) does not fit the {} tokens left of the {}-token KV cache "
                       "(--ctx); refused, the conversation goes on\n",
                       line_number, ids.size() - (pending ? 1 : 0), room - 1, session.max_tokens());
            continue;
        }
        app::StreamedText streamed(tokenizer, o.stops, stdout);
        SamplingParams sampling = o.sampling;
        sampling.seed += turn++;  // not the same random draws every turn
        const GenerationResult result = generate(
            session, ids,
            GenerationOptions{
                .n_predict = static_cast<std::uint32_t>(std::min<std::uint64_t>(o.n_predict, room - ids.size() + 1)),
                .sampling = sampling,
                .stop_ids = stop_ids,
                .on_token =
                    [&streamed](std::uint32_t, std::uint32_t id) {
                        return streamed.push(id) && app::stop_signal() == 0;  // Ctrl-C ends the answer
                    },
                .on_prefill = app::prefill_progress(!o.quiet)});
        streamed.finish();
        app::write_checked("\n");
        pending = result.tokens.back();
    }
    if (!o.quiet) {
        fmt::print(stderr, "vkf-run: {} tokens in the session\n", session.position());
    }
    return app::kExitOk;
}

}  // namespace vkf::run_cli
