// StepExecutor::run (host/model/step_executor.hpp): a schedule checked, its blocks copied,
// its per-step buffers written, its recorded step submitted and its outputs read back.

#include "host/model/step_executor.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

namespace vkf {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

// A schedule the kernels would run without complaint but wrongly (keys written where no
// query reads them, rows no sequence owns, logits of rows nobody asked for) is refused here;
// paged_sequence_table checks the sequence table's own rules when it is written.
void StepExecutor::check(const StepSchedule& s, std::span<const float> hidden_in) const {
    const ModelConfig& c = model_.config();
    const std::uint32_t rows = s.rows();
    const std::uint32_t bs = options_.decoder.block_size;
    const std::uint64_t pool_rows = std::uint64_t{options_.blocks} * bs;
    const auto fail = [](const std::string& what) { throw Error(fmt::format("step executor: {}", what)); };
    if (s.empty() || rows == 0) {
        fail("the schedule runs no rows");
    }
    if (rows > options_.max_rows || s.sequences.size() > options_.max_sequences) {
        fail(fmt::format("{} rows of {} sequences; a step holds {} rows of {}", rows, s.sequences.size(),
                         options_.max_rows, options_.max_sequences));
    }
    if (s.positions.size() != rows || s.slots.size() != rows) {
        fail(fmt::format("{} ids, {} positions and {} slots; one each per row", rows, s.positions.size(),
                         s.slots.size()));
    }
    if (model_.first_stage() != hidden_in.empty() ||
        (!hidden_in.empty() && hidden_in.size() != std::uint64_t{rows} * c.hidden)) {
        fail(fmt::format("{} hidden values for {} rows of {} on {}; expected {}", hidden_in.size(), rows, c.hidden,
                         describe(model_.layers(), c), model_.first_stage() ? 0 : std::uint64_t{rows} * c.hidden));
    }
    for (const BlockCopy& copy : s.copies) {
        if (copy.from >= options_.blocks || copy.to >= options_.blocks || copy.from == copy.to) {
            fail(fmt::format("a copy of block {} into block {}, in a pool of {}", copy.from, copy.to, options_.blocks));
        }
    }
    std::uint32_t next_row = 0, max_q_len = 0;
    std::size_t logit = 0;
    for (const ScheduledSequence& q : s.sequences) {
        if (q.rows == 0 || q.q_start != next_row || std::uint64_t{q.q_start} + q.rows > rows) {
            fail(
                fmt::format("sequence {} has rows {} .. {}; the step's sequences take its {} rows in turn, "
                            "from row {}",
                            q.id, q.q_start, std::uint64_t{q.q_start} + q.rows, rows, next_row));
        }
        next_row += q.rows;
        max_q_len = std::max(max_q_len, q.rows);
        for (std::uint32_t b : q.blocks) {
            if (b >= options_.blocks) {
                fail(fmt::format("sequence {} holds block {}, in a pool of {}", q.id, b, options_.blocks));
            }
        }
        for (std::uint32_t i = 0; i < q.rows; ++i) {
            const std::uint32_t row = q.q_start + i;
            const std::uint64_t position = std::uint64_t{q.position} + i;
            std::uint64_t entry = position / bs;
            if (options_.decoder.window != 0) {
                entry %= options_.decoder.blocks_per_seq;  // a ring (AttentionParams::window)
            }
            if (s.positions[row] != position || entry >= q.blocks.size() ||
                s.slots[row] != std::uint64_t{q.blocks[entry]} * bs + position % bs || s.slots[row] >= pool_rows) {
                fail(
                    fmt::format("row {} (sequence {}, position {}) has position {} and KV slot {}; its block table "
                                "puts it at {}",
                                row, q.id, position, s.positions[row], s.slots[row],
                                entry < q.blocks.size() ? fmt::format("slot {}", q.blocks[entry] * bs + position % bs)
                                                        : std::string("no slot")));
            }
            if (model_.first_stage() && s.ids[row] >= c.vocab_size) {
                fail(fmt::format("row {} has token {}; the vocabulary has {}", row, s.ids[row], c.vocab_size));
            }
        }
        for (std::uint32_t i = 0; i < q.logit_rows; ++i, ++logit) {
            if (logit >= s.logit_rows.size() || s.logit_rows[logit] < q.q_start ||
                s.logit_rows[logit] >= q.q_start + q.rows ||
                (logit > 0 && s.logit_rows[logit] <= s.logit_rows[logit - 1])) {
                fail(
                    fmt::format("sequence {} asks for the logits of {} of its rows {} .. {}; the schedule's logit "
                                "rows do not list them in order",
                                q.id, q.logit_rows, q.q_start, q.q_start + q.rows));
            }
        }
    }
    if (logit != s.logit_rows.size() || max_q_len != s.max_q_len) {
        fail(fmt::format("{} logit rows and {} rows at most; the sequences ask for {} and have {} at most",
                         s.logit_rows.size(), s.max_q_len, logit, max_q_len));
    }
}

void StepExecutor::copy_blocks(const std::vector<BlockCopy>& copies) {
    if (copies.empty()) {
        return;
    }
    std::unique_ptr<CommandList> list = ctx_.command_list();
    for (const BlockCopy& copy : copies) {
        cache_.record_copy(*list, copy.from, copy.to);
    }
    ctx_.submit(*list);
    stats_.block_copies += copies.size();
}

void StepExecutor::read_timings(const CommandList& list, StepOutcome& outcome) {
    if (!list.times_total()) {
        return;
    }
    // Profiling reads every op's timestamps once; their sum is the submission's GPU time.
    double ms = 0.0;
    if (options_.profiling) {
        for (const OpTiming& t : list.timings()) {
            OpProfile& p = profile_[t.label];
            p.ms += t.ms;
            ++p.dispatches;
            ms += t.ms;
        }
    } else {
        ms = list.total_ms();
    }
    stats_.gpu_ms += ms;
    outcome.gpu_ms = ms;
}

StepOutput StepExecutor::run(const StepSchedule& schedule, std::span<const float> hidden_in) {
    const auto start = std::chrono::steady_clock::now();
    check(schedule, hidden_in);
    const ModelConfig& c = model_.config();
    const StepShape shape = this->shape(schedule);
    std::vector<PagedSequence> table;
    for (const ScheduledSequence& s : schedule.sequences) {
        // With a window, kv_len counts positions on past the ring; the kernels read key j at
        // blocks[(j / block_size) % blocks_per_seq] (AttentionParams::window).
        table.push_back(PagedSequence{.q_start = s.q_start, .q_len = s.rows, .kv_len = s.kv_len(), .blocks = s.blocks});
    }
    const PagedKv paged{.block_size = options_.decoder.block_size,
                        .blocks_per_seq = options_.decoder.blocks_per_seq,
                        .q_rows = shape.tokens};
    const std::vector<std::uint32_t> table_words = paged_sequence_table(table, paged, options_.decoder.window);

    copy_blocks(schedule.copies);
    RecordedStep& step = recorded(shape);
    ctx_.upload(ids_, std::span<const std::uint32_t>(schedule.ids));
    if (positions_.valid()) {
        ctx_.upload(positions_, std::span<const std::uint32_t>(schedule.positions));
    }
    ctx_.upload(slots_, std::span<const std::uint32_t>(schedule.slots));
    ctx_.upload(sequence_table_, std::span<const std::uint32_t>(table_words));
    if (shape.logit_rows > 0) {
        ctx_.upload(logit_index_, std::span<const std::uint32_t>(schedule.logit_rows));
    }
    if (options_.poison && shape.logit_rows > 0) {
        const std::vector<float> nan(std::size_t{shape.logit_rows} * c.vocab_size, std::nanf(""));
        ctx_.upload(logits_, std::span<const float>(nan));
    }
    if (!model_.first_stage()) {
        const auto upload_start = std::chrono::steady_clock::now();
        ctx_.upload(hidden_, hidden_in);
        stats_.hand_off_ms += ms_since(upload_start);
    }
    CommandList& list = *step.list;
    ctx_.submit(list);
    ++stats_.submissions;
    stats_.dispatches += list.dispatch_command_count();
    stats_.barriers += list.barrier_count();
    stats_.tokens += shape.tokens;
    StepOutput out;
    read_timings(list, out.outcome);
    out.logits.resize(std::size_t{shape.logit_rows} * c.vocab_size);
    if (!out.logits.empty()) {
        ctx_.download(logits_, std::span<float>(out.logits));
    }
    if (!model_.last_stage()) {
        const auto download_start = std::chrono::steady_clock::now();
        out.hidden.resize(std::size_t{shape.tokens} * c.hidden);
        ctx_.download(hidden_, std::span<float>(out.hidden));
        stats_.hand_off_ms += ms_since(download_start);
    }
    stats_.wall_ms += ms_since(start);
    return out;
}

}  // namespace vkf
