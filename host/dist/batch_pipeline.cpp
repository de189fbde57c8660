#include "host/dist/batch_pipeline.hpp"

#include <fmt/format.h>

#include <chrono>

namespace vkf::dist {

namespace {

using clock = std::chrono::steady_clock;

double ms_since(clock::time_point start) {
    return std::chrono::duration<double, std::milli>(clock::now() - start).count();
}

// The words of a Tag::Command message of the batch protocol: the kind, then its arguments;
// a sequence id is two words, low first.
enum class Command : std::uint32_t {
    Add = 11,     // then the id rank 0's stage gave (every rank's must agree), the cache salt (two words)
    Feed = 12,    // then the id, the Logits wanted, the ids
    Remove = 13,  // then the id
    Step = 14,    // run the step whose rows the stage before sends
    Stop = 15,    // the run is over
};

void push_id(std::vector<std::uint32_t>& words, SequenceId id) {
    words.push_back(static_cast<std::uint32_t>(id));
    words.push_back(static_cast<std::uint32_t>(id >> 32));
}

SequenceId id_at(const std::vector<std::uint32_t>& words, std::size_t at) {
    if (words.size() < at + 2) {
        throw Error("rank 0 sent a command without its sequence id");
    }
    return SequenceId{words[at]} | (SequenceId{words[at + 1]} << 32);
}

std::vector<StageRows> schedule_of(const StepResult& step) {
    std::vector<StageRows> rows;
    for (const SequenceOutput& out : step.ran) {
        rows.push_back({out.id, out.tokens});
    }
    return rows;
}

}  // namespace

RankZeroBatch::RankZeroBatch(Channel& channel, Batch& stage, std::uint32_t in_flight)
    : PipelinedFront(stage, in_flight != 0 ? in_flight : static_cast<std::uint32_t>(channel.size())),
      channel_(channel) {
    if (!stage.model().first_stage() || stage.model().last_stage() || channel.size() < 2) {
        throw Error("rank 0 of a layer split holds the first layers and not the last");
    }
}

void RankZeroBatch::command(const std::vector<std::uint32_t>& words) {
    const auto start = clock::now();
    for (int r = 1; r < channel_.size(); ++r) {
        channel_.send_values<std::uint32_t>(r, Tag::Command, words);
        traffic_.messages += 1;
    }
    traffic_.transfer_ms += ms_since(start);
}

SequenceId RankZeroBatch::add(std::uint64_t cache_salt) {
    channel_.check();
    const SequenceId id = first_.add(cache_salt);
    std::vector<std::uint32_t> words{static_cast<std::uint32_t>(Command::Add)};
    push_id(words, id);
    push_id(words, cache_salt);
    command(words);
    return id;
}

void RankZeroBatch::feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits) {
    channel_.check();
    // Rank 0 feeds first: what it refuses (unknown sequence, ids >= vocab_size, too many
    // tokens) is never sent on.
    first_.feed(id, ids, logits);
    std::vector<std::uint32_t> words{static_cast<std::uint32_t>(Command::Feed)};
    push_id(words, id);
    words.push_back(static_cast<std::uint32_t>(logits));
    words.insert(words.end(), ids.begin(), ids.end());
    command(words);
}

void RankZeroBatch::remove(SequenceId id) {
    first_.remove(id);
    std::vector<std::uint32_t> words{static_cast<std::uint32_t>(Command::Remove)};
    push_id(words, id);
    try {
        command(words);
    } catch (const RankFailure&) {
        // The channel keeps the failure: the next step() throws it. Removing stays safe to
        // call while a failed run is cleaned up (BatchGenerator's cancel and destructor).
    }
}

void RankZeroBatch::stop() {
    // The last rank's logits of the steps still in flight are received (and dropped): a send
    // nobody receives could keep that rank from stopping.
    while (pipeline_.in_flight() != 0) {
        pipeline_.finish_oldest();
    }
    command({static_cast<std::uint32_t>(Command::Stop)});
    channel_.finish();
}

StepResult RankZeroBatch::step() {
    channel_.check();
    return pipeline_.step();
}

void RankZeroBatch::hand_off(StepResult& started) {
    command({static_cast<std::uint32_t>(Command::Step)});
    const auto start = clock::now();
    channel_.send_values<StageRows>(1, Tag::Schedule, schedule_of(started));
    channel_.send_values<float>(1, Tag::Hidden, started.hidden);
    traffic_.transfer_ms += ms_since(start);
    traffic_.messages += 2;
    traffic_.transfer_bytes += started.hidden.size() * sizeof(float);
    traffic_.steps += 1;
}

void RankZeroBatch::receive_logits(StepResult& oldest) {
    const int last = channel_.size() - 1;
    const auto start = clock::now();
    const std::vector<std::uint32_t> rows = channel_.receive_values<std::uint32_t>(last, Tag::Logits);
    const std::vector<float> logits = channel_.receive_values<float>(last, Tag::Logits);
    traffic_.downstream_ms += ms_since(start);
    traffic_.messages += 2;
    traffic_.transfer_bytes += logits.size() * sizeof(float);
    const std::size_t vocab = first_.model().config().vocab_size;
    std::size_t total = 0;
    for (const std::uint32_t r : rows) {
        total += r;
    }
    if (rows.size() != oldest.ran.size() || logits.size() != total * vocab) {
        throw Error(fmt::format("rank {} sent {} logits for {} sequences; rank 0 ran {} sequences in that step", last,
                                logits.size(), rows.size(), oldest.ran.size()));
    }
    std::size_t at = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::size_t n = rows[i] * vocab;
        oldest.ran[i].logits.assign(logits.begin() + static_cast<std::ptrdiff_t>(at),
                                    logits.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
    }
}

void serve_batch_stage(Channel& channel, Batch& stage, const std::function<void(std::uint64_t)>& before_step) {
    if (stage.model().first_stage()) {
        throw Error("a serving rank of a layer split holds later layers, not the first");
    }
    const int previous = channel.rank() - 1;
    const bool last = stage.model().last_stage();
    const std::size_t vocab = stage.model().config().vocab_size;
    std::uint64_t steps = 0;
    for (;;) {
        const std::vector<std::uint32_t> words = channel.receive_values<std::uint32_t>(0, Tag::Command);
        if (words.empty()) {
            throw Error("rank 0 sent an empty command");
        }
        switch (static_cast<Command>(words[0])) {
            case Command::Add: {
                // The salt after the id: the ranks' prefix caches must hit and miss alike.
                const SequenceId mine = stage.add(id_at(words, 3));
                if (mine != id_at(words, 1)) {
                    throw Error(fmt::format("rank 0 added sequence {}, this rank's stage {}: the ranks disagree",
                                            id_at(words, 1), mine));
                }
                break;
            }
            case Command::Feed:
                if (words.size() < 5) {
                    throw Error("rank 0 sent a feed without ids");
                }
                stage.feed(id_at(words, 1), std::span(words).subspan(4), static_cast<Logits>(words[3]));
                break;
            case Command::Remove:
                stage.remove(id_at(words, 1));
                break;
            case Command::Step: {
                if (before_step) {
                    before_step(steps);
                }
                ++steps;
                const std::vector<StageRows> schedule = channel.receive_values<StageRows>(previous, Tag::Schedule);
                const std::vector<float> hidden = channel.receive_values<float>(previous, Tag::Hidden);
                const StepResult step = stage.step(schedule, hidden);
                channel.check();
                if (last) {
                    std::vector<std::uint32_t> rows;
                    std::vector<float> logits;
                    for (const SequenceOutput& out : step.ran) {
                        rows.push_back(static_cast<std::uint32_t>(out.logits.size() / vocab));
                        logits.insert(logits.end(), out.logits.begin(), out.logits.end());
                    }
                    // Posted, not waited on: rank 0 may be sending the next step to this
                    // pipeline's ranks meanwhile, and receives these only after.
                    channel.post_values<std::uint32_t>(0, Tag::Logits, rows);
                    channel.post_values<float>(0, Tag::Logits, logits);
                } else {
                    channel.send_values<StageRows>(channel.rank() + 1, Tag::Schedule, schedule_of(step));
                    channel.send_values<float>(channel.rank() + 1, Tag::Hidden, step.hidden);
                }
                break;
            }
            case Command::Stop:
                channel.finish();
                return;
            default:
                throw Error(fmt::format("rank 0 sent an unknown command {}", words[0]));
        }
    }
}

}  // namespace vkf::dist
