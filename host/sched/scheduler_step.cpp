// The Scheduler's steps: which pending rows one step runs (decode first, prompt chunks after,
// within the step's budgets and the pool's free blocks), the rows a later stage of a split
// follows, and the plain StepSchedule both become.

#include "host/sched/scheduler.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <set>

namespace vkf {

std::uint32_t prompt_chunk_after(double gpu_ms, std::uint32_t tokens, std::uint32_t target_ms,
                                 std::uint32_t max_chunk) {
    if (gpu_ms <= 0.0 || tokens == 0) {
        return max_chunk;
    }
    // As many tokens as fit the target at this chunk's time per token, rounded down to a
    // power of two so that few chunk sizes (recorded lists) recur.
    const double fit = target_ms / (gpu_ms / tokens);
    if (fit >= max_chunk) {
        return max_chunk;
    }
    return std::bit_floor(static_cast<std::uint32_t>(std::max(fit, 1.0)));
}

StepSchedule Scheduler::schedule() {
    // Decode tokens first (they hold a user waiting token by token), then prompt chunks, each
    // group in the order the sequences were added.
    std::vector<std::pair<SequenceId, Sequence*>> order;
    for (auto& [id, seq] : sequences_) {
        if (seq.computed < seq.tokens.size()) {
            order.emplace_back(id, &seq);
        }
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
        const bool a_decode = a.second->tokens.size() - a.second->computed == 1;
        const bool b_decode = b.second->tokens.size() - b.second->computed == 1;
        return a_decode != b_decode ? a_decode : a.second->order < b.second->order;
    });
    std::vector<Chosen> chosen;
    std::vector<BlockCopy> copies;
    std::vector<SequenceId> blocked, deferred;
    std::uint32_t rows = 0;
    for (auto& [id, seq] : order) {
        const auto want = static_cast<std::uint32_t>(seq->tokens.size()) - seq->computed;
        if (rows == chunk_limit_ || chosen.size() == options_.max_sequences) {
            deferred.push_back(id);
            continue;
        }
        const std::uint32_t n = seq->table.reserve(seq->computed, std::min(want, chunk_limit_ - rows), copies);
        if (n == 0) {
            blocked.push_back(id);
            continue;
        }
        chosen.push_back(Chosen{id, seq, n});
        rows += n;
    }
    StepSchedule step = emit(chosen, std::move(copies));
    step.blocked = std::move(blocked);
    step.deferred = std::move(deferred);
    return step;
}

StepSchedule Scheduler::follow(std::span<const StageRows> rows, std::string_view who) {
    std::uint64_t total = 0;
    for (const StageRows& s : rows) {
        total += s.rows;
    }
    if (total > options_.chunk || rows.size() > options_.max_sequences) {
        throw Error(fmt::format("{}: a step of {} rows of {} sequences, over the batch's {} rows of {} sequences", who,
                                total, rows.size(), options_.chunk, options_.max_sequences));
    }
    // Checked whole before anything is reserved: a bad schedule changes nothing.
    std::set<SequenceId> seen;
    for (const StageRows& s : rows) {
        const std::uint32_t pending = this->pending(s.id);  // throws for an unknown sequence
        if (!seen.insert(s.id).second) {
            throw Error(fmt::format("{}: the schedule names sequence {} twice", who, s.id));
        }
        if (s.rows == 0 || s.rows > pending) {
            throw Error(fmt::format("{}: the schedule runs {} rows of sequence {}, which has {} tokens pending", who,
                                    s.rows, s.id, pending));
        }
    }
    std::vector<Chosen> chosen;
    std::vector<BlockCopy> copies;
    for (const StageRows& s : rows) {
        Sequence& seq = get(s.id);
        const std::uint32_t n = seq.table.reserve(seq.computed, s.rows, copies);
        if (n != s.rows) {
            // Every stage's front was given the same calls: their KV blocks agree, unless not.
            throw Error(fmt::format(
                "{}: room for {} of the {} rows of sequence {} the stage before ran: the stages' batches were not "
                "given the same calls",
                who, n, s.rows, s.id));
        }
        chosen.push_back(Chosen{s.id, &seq, s.rows});
    }
    return emit(chosen, std::move(copies));
}

StepSchedule Scheduler::emit(const std::vector<Chosen>& chosen, std::vector<BlockCopy> copies) const {
    const std::uint32_t bs = options_.block_size;
    StepSchedule step;
    step.copies = std::move(copies);
    for (const Chosen& c : chosen) {
        const Sequence& seq = *c.seq;
        ScheduledSequence entry{.id = c.id,
                                .q_start = step.rows(),
                                .rows = c.rows,
                                .position = seq.computed,
                                .blocks = seq.table.entries()};
        for (std::uint32_t i = 0; i < c.rows; ++i) {
            const std::uint32_t pos = seq.computed + i;
            if (seq.want[pos] != 0) {
                step.logit_rows.push_back(step.rows());
                ++entry.logit_rows;
            }
            step.ids.push_back(seq.tokens[pos]);
            step.positions.push_back(pos);
            step.slots.push_back(seq.table.block(pos / bs) * bs + pos % bs);
        }
        step.max_q_len = std::max(step.max_q_len, c.rows);
        step.sequences.push_back(std::move(entry));
    }
    return step;
}

}  // namespace vkf
