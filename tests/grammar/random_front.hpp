#pragma once
// A BatchFront without a model, for the grammar's tests of generation (BatchGenerator with
// GenerationOptions::grammar): each step gives every sequence with pending tokens one row of
// seeded random logits, uniform in [0, 4) plus a fixed boost per token id.

#include "host/model/batch.hpp"
#include "host/model/batch_front.hpp"
#include "host/util/splitmix64.hpp"

#include <map>
#include <utility>
#include <vector>

namespace vkf {

class RandomFront : public BatchFront {
public:
    RandomFront(std::vector<float> boost, std::uint64_t seed) : boost_(std::move(boost)), state_(seed) {}
    SequenceId add(std::uint64_t /*cache_salt*/ = 0) override {
        pending_[next_] = 0;
        positions_[next_] = 0;
        return next_++;
    }
    void feed(SequenceId id, std::span<const std::uint32_t> ids, Logits) override {
        pending_.at(id) += static_cast<std::uint32_t>(ids.size());
    }
    void remove(SequenceId id) override {
        pending_.erase(id);
        positions_.erase(id);
    }
    StepResult step() override {
        StepResult r;
        for (auto& [id, n] : pending_) {
            if (n == 0) {
                continue;
            }
            positions_[id] += n;
            SequenceOutput out{.id = id, .tokens = n, .position = positions_[id], .done = true};
            for (const float b : boost_) {
                out.logits.push_back(static_cast<float>(splitmix64_next(state_) >> 40) * 0x1.0p-22f + b);
            }
            n = 0;
            r.ran.push_back(std::move(out));
        }
        return r;
    }
    bool contains(SequenceId id) const override { return pending_.contains(id); }
    const std::vector<std::uint32_t>& chunk_ends(SequenceId) const override { return none_; }
    std::uint32_t shared_prefix(SequenceId) const override { return 0; }
    const KvBlocks& blocks() const override { return blocks_; }
    const PrefixCache* prefix_cache() const override { return nullptr; }
    std::uint32_t max_sequence_tokens() const override { return 1u << 20; }
    std::uint32_t window() const override { return 0; }

private:
    std::vector<float> boost_;
    std::uint64_t state_;
    std::map<SequenceId, std::uint32_t> pending_, positions_;
    SequenceId next_ = 0;
    std::vector<std::uint32_t> none_;
    KvBlocks blocks_{1};
};

}  // namespace vkf
