#include "host/dist/stage_session.hpp"

#include <fmt/format.h>

#include <chrono>
#include <string>

namespace vkf::dist {

namespace {

// The words of a Tag::Command message: the kind, then its arguments.
enum class Command : std::uint32_t {
    Feed = 1,   // then the Logits wanted, then the ids
    Step = 2,   // run the step whose rows the stage before sends
    Reset = 3,  // end the sequence, start an empty one
    Stop = 4,   // the run is over
};

std::vector<StageRows> schedule_of(const StepResult& step) {
    std::vector<StageRows> rows;
    for (const SequenceOutput& out : step.ran) {
        rows.push_back({out.id, out.tokens});
    }
    return rows;
}

}  // namespace

RankZeroSession::RankZeroSession(Channel& channel, const Model& stage, SessionOptions options)
    : channel_(channel), options_(options), batch_(stage, session_batch_options(options)), sequence_(batch_.add()) {
    if (!stage.first_stage() || stage.last_stage()) {
        throw Error("rank 0 of a layer split holds the first layers and not the last");
    }
}

void RankZeroSession::command(const std::vector<std::uint32_t>& words) {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 1; r < channel_.size(); ++r) {
        channel_.send_values<std::uint32_t>(r, Tag::Command, words);
        stats_.messages += 1;
    }
    stats_.transfer_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

PreparationStats RankZeroSession::prepare(std::uint32_t prompt_tokens) {
    return batch_.prepare(batch_.sequence_shapes(prompt_tokens));
}

void RankZeroSession::reset() {
    command({static_cast<std::uint32_t>(Command::Reset)});
    batch_.remove(sequence_);
    sequence_ = batch_.add();
}

void RankZeroSession::stop() {
    command({static_cast<std::uint32_t>(Command::Stop)});
    channel_.finish();
}

std::vector<float> RankZeroSession::forward(std::span<const std::uint32_t> ids, Logits which,
                                            const ChunkProgress& on_chunk) {
    const std::uint32_t vocab = config().vocab_size;
    if (ids.empty()) {
        throw Error("session: forward needs at least one token id");
    }
    if (options_.window == 0 && ids.size() > options_.max_tokens - position()) {
        throw Error(fmt::format("session: {} more tokens after {} exceed the KV cache's {} tokens", ids.size(),
                                position(), options_.max_tokens));
    }
    // Rank 0 feeds first: ids it refuses (>= vocab_size) are never sent on.
    batch_.feed(sequence_, ids, which);
    std::vector<std::uint32_t> feed{static_cast<std::uint32_t>(Command::Feed), static_cast<std::uint32_t>(which)};
    feed.insert(feed.end(), ids.begin(), ids.end());
    command(feed);
    const int last = channel_.size() - 1;
    std::vector<float> logits;
    logits.reserve(which == Logits::All ? ids.size() * vocab : which == Logits::Last ? vocab : 0);
    while (batch_.pending(sequence_) > 0) {
        channel_.check();
        command({static_cast<std::uint32_t>(Command::Step)});
        const StepResult step = batch_.step();
        if (step.ran.empty()) {
            throw Error(fmt::format("session: the step ran nothing with {} tokens pending", batch_.pending(sequence_)));
        }
        const auto start = std::chrono::steady_clock::now();
        channel_.send_values<StageRows>(1, Tag::Schedule, schedule_of(step));
        channel_.send_values<float>(1, Tag::Hidden, step.hidden);
        const auto sent = std::chrono::steady_clock::now();
        const std::vector<float> rows = channel_.receive_values<float>(last, Tag::Logits);
        const auto back = std::chrono::steady_clock::now();
        stats_.transfer_ms += std::chrono::duration<double, std::milli>(sent - start).count();
        stats_.downstream_ms += std::chrono::duration<double, std::milli>(back - sent).count();
        stats_.steps += 1;
        stats_.messages += 3;
        stats_.transfer_bytes += (step.hidden.size() + rows.size()) * sizeof(float);
        logits.insert(logits.end(), rows.begin(), rows.end());
        if (on_chunk) {
            on_chunk(ids.size() - batch_.pending(sequence_), ids.size());
        }
    }
    const std::size_t expected = which == Logits::All ? ids.size() * vocab : which == Logits::Last ? vocab : 0;
    if (logits.size() != expected) {
        throw Error(fmt::format("rank {} sent {} logits for {} tokens; {} expected", last, logits.size(), ids.size(),
                                expected));
    }
    return logits;
}

void serve_stage(Channel& channel, const Model& stage, SessionOptions options, std::uint32_t prompt_tokens,
                 const std::function<void(std::uint64_t)>& before_step) {
    if (stage.first_stage()) {
        throw Error("a serving rank of a layer split holds later layers, not the first");
    }
    Batch batch(stage, session_batch_options(options));
    SequenceId sequence = batch.add();
    batch.prepare(batch.sequence_shapes(prompt_tokens));
    const int previous = channel.rank() - 1;
    const bool last = stage.last_stage();
    std::uint64_t steps = 0;
    for (;;) {
        const std::vector<std::uint32_t> words = channel.receive_values<std::uint32_t>(0, Tag::Command);
        if (words.empty()) {
            throw Error("rank 0 sent an empty command");
        }
        switch (static_cast<Command>(words[0])) {
            case Command::Feed:
                if (words.size() < 3) {
                    throw Error("rank 0 sent a feed without ids");
                }
                batch.feed(sequence, std::span(words).subspan(2), static_cast<Logits>(words[1]));
                break;
            case Command::Step: {
                if (before_step) {
                    before_step(steps);
                }
                ++steps;
                const std::vector<StageRows> schedule = channel.receive_values<StageRows>(previous, Tag::Schedule);
                const std::vector<float> hidden = channel.receive_values<float>(previous, Tag::Hidden);
                const StepResult step = batch.step(schedule, hidden);
                channel.check();
                if (last) {
                    std::vector<float> logits;
                    for (const SequenceOutput& out : step.ran) {
                        logits.insert(logits.end(), out.logits.begin(), out.logits.end());
                    }
                    channel.send_values<float>(0, Tag::Logits, logits);
                } else {
                    channel.send_values<StageRows>(channel.rank() + 1, Tag::Schedule, schedule_of(step));
                    channel.send_values<float>(channel.rank() + 1, Tag::Hidden, step.hidden);
                }
                break;
            }
            case Command::Reset:
                batch.remove(sequence);
                sequence = batch.add();
                break;
            case Command::Stop:
                channel.finish();
                return;
            default:
                throw Error(fmt::format("rank 0 sent an unknown command {}", words[0]));
        }
    }
}

}  // namespace vkf::dist
