// Batch's steps as a later stage of a layer split (host/model/batch.hpp): the rows the stage
// before ran, from its hidden rows, and the copies on write any step needs first.

#include "host/model/batch.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <string>

namespace vkf {

void Batch::copy_blocks(const std::vector<BlockCopy>& copies) {
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

StepResult Batch::step(std::span<const StageRows> schedule, std::span<const float> hidden_in) {
    const ModelConfig& c = model_.config();
    const std::string stage = fmt::format("batch ({})", describe(model_.layers(), c));
    if (model_.first_stage()) {
        throw Error(fmt::format("{}: the first stage of a split schedules its own steps: step()", stage));
    }
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t rows = 0;
    for (const StageRows& s : schedule) {
        rows += s.rows;
    }
    if (hidden_in.size() != rows * c.hidden) {
        throw Error(fmt::format("{}: {} hidden values for {} rows of {}; expected {}", stage, hidden_in.size(), rows,
                                c.hidden, rows * c.hidden));
    }
    // The scheduler checks the rest (budgets, unknown or repeated sequences, rows not pending)
    // before it reserves anything.
    const StepSchedule followed = scheduler_.follow(schedule, stage);
    StepResult result;
    if (!followed.empty()) {
        run(followed, result, hidden_in);
    }
    stats_.wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace vkf
