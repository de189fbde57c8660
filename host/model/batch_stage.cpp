// Batch's steps as a later stage of a layer split (host/model/batch.hpp): the rows the stage
// before ran, from its hidden rows, and the copies on write any step needs first.

#include "host/model/batch.hpp"

#include "runtime/error.hpp"

#include <chrono>
#include <set>
#include <string>

namespace vkf {

void Batch::copy_blocks(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& copies) {
    if (copies.empty()) {
        return;
    }
    std::unique_ptr<CommandList> list = ctx_.command_list();
    for (auto [from, to] : copies) {
        cache_.record_copy(*list, from, to);
    }
    ctx_.submit(*list);
    stats_.block_copies += copies.size();
}

StepResult Batch::step(std::span<const StageRows> schedule, std::span<const float> hidden_in) {
    const ModelConfig& c = model_.config();
    const std::string stage = "batch (" + describe(model_.layers(), c) + ")";
    if (model_.first_stage()) {
        throw Error(stage + ": the first stage of a split schedules its own steps: step()");
    }
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t rows = 0;
    for (const StageRows& s : schedule) {
        rows += s.rows;
    }
    if (hidden_in.size() != rows * c.hidden) {
        throw Error(stage + ": " + std::to_string(hidden_in.size()) + " hidden values for " + std::to_string(rows) +
                    " rows of " + std::to_string(c.hidden) + "; expected " + std::to_string(rows * c.hidden));
    }
    if (rows > options_.chunk || schedule.size() > options_.max_sequences) {
        throw Error(stage + ": a step of " + std::to_string(rows) + " rows of " + std::to_string(schedule.size()) +
                    " sequences, over the batch's " + std::to_string(options_.chunk) + " rows of " +
                    std::to_string(options_.max_sequences) + " sequences");
    }
    // Checked whole before anything is reserved: a bad schedule changes nothing.
    std::set<SequenceId> seen;
    for (const StageRows& s : schedule) {
        const std::uint32_t pending = this->pending(s.id);  // throws for an unknown sequence
        if (!seen.insert(s.id).second) {
            throw Error(stage + ": the schedule names sequence " + std::to_string(s.id) + " twice");
        }
        if (s.rows == 0 || s.rows > pending) {
            throw Error(stage + ": the schedule runs " + std::to_string(s.rows) + " rows of sequence " +
                        std::to_string(s.id) + ", which has " + std::to_string(pending) + " tokens pending");
        }
    }
    StepResult result;
    std::vector<Scheduled> scheduled;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> copies;
    for (const StageRows& s : schedule) {
        Sequence& seq = get(s.id);
        const std::uint32_t n = reserve(seq, s.rows, copies);
        if (n != s.rows) {
            // Every stage's batch was given the same calls: their KV blocks agree, unless not.
            throw Error(stage + ": room for " + std::to_string(n) + " of the " + std::to_string(s.rows) +
                        " rows of sequence " + std::to_string(s.id) +
                        " the stage before ran: the stages' batches were not given the same calls");
        }
        scheduled.push_back(Scheduled{s.id, &seq, s.rows});
    }
    if (!scheduled.empty()) {
        copy_blocks(copies);
        run(scheduled, result, hidden_in);
    }
    stats_.wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace vkf
