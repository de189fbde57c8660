#pragma once
// What the layer-split suites share (test_model_split: the stages' Batches driven by hand;
// test_split_batch: SplitBatch's pipeline): several Contexts on the one test device standing
// in for several devices, the stages' Batches of a SplitModel, and the comparison of their
// logits rows against one device's.

#include "host/model/batch.hpp"
#include "host/model/split_model.hpp"
#include "host/util/compare.hpp"
#include "tests/support/vulkan_test.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace vkf::test {

inline std::uint32_t argmax(std::span<const float> row) {
    return static_cast<std::uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

inline ModelConfig four_layers(ModelConfig c) {
    c.n_layer = 4;
    return c;
}

// The suite's context and two more on the same device: three "devices". With
// `kStagingSecond`, the second moves data through a staging buffer
// (ContextOptions::force_staging), as a discrete GPU does.
template <bool kStagingSecond>
class ThreeDevicesTest : public VulkanTest {
public:
    static void SetUpTestSuite() {
        VulkanTest::SetUpTestSuite();
        extra_sink_ = std::make_unique<MessageSink>();
        for (auto& ctx : extra_) {
            ContextOptions options = test_options(*extra_sink_);
            options.force_staging = kStagingSecond && &ctx == &extra_.front();
            ctx = std::make_unique<Context>(options);
        }
    }
    static void TearDownTestSuite() {
        for (auto& ctx : extra_) {
            ctx.reset();
        }
        extra_sink_.reset();
        VulkanTest::TearDownTestSuite();
    }

protected:
    void TearDown() override {
        EXPECT_EQ(extra_sink_->validation_count(), 0u);
        VulkanTest::TearDown();
    }
    static std::vector<Context*> devices(std::size_t n) {
        std::vector<Context*> out{&ctx()};
        for (std::size_t i = 1; i < n; ++i) {
            out.push_back(extra_.at(i - 1).get());
        }
        return out;
    }

private:
    static inline std::unique_ptr<MessageSink> extra_sink_;
    static inline std::array<std::unique_ptr<Context>, 2> extra_;
};

// One Batch per stage of `split`, made with `options`, in stage order.
struct StageBatches {
    std::vector<std::unique_ptr<Batch>> owned;
    std::vector<Batch*> stages;
};

inline StageBatches stage_batches(const SplitModel& split, const BatchOptions& options) {
    StageBatches out;
    for (const Model* stage : split.stages()) {
        out.owned.push_back(std::make_unique<Batch>(*stage, options));
        out.stages.push_back(out.owned.back().get());
    }
    return out;
}

// "2,1,1": the layers per stage, for a case's line.
inline std::string split_text(std::span<const std::uint32_t> counts) {
    std::string text;
    for (const std::uint32_t n : counts) {
        text += (text.empty() ? "" : ",") + std::to_string(n);
    }
    return text;
}

// Expects every row of `got` ([rows, vocab]) within `tolerance` (relative) of `want`'s;
// failures name `what` and the row. Returns the largest relative difference.
inline double expect_rows_near(std::span<const float> got, std::span<const double> want, std::uint32_t vocab,
                               double tolerance, const std::string& what) {
    EXPECT_EQ(got.size(), want.size()) << what;
    EXPECT_EQ(got.size() % vocab, 0u) << what;
    const std::size_t rows = std::min(got.size(), want.size()) / vocab;
    double worst = 0.0;
    for (std::size_t t = 0; t < rows; ++t) {
        const ErrorStats e = compare_to_reference(got.subspan(t * vocab, vocab), want.subspan(t * vocab, vocab));
        EXPECT_LE(e.max_rel, tolerance) << what << ", row " << t << ": " << describe(e);
        worst = std::max(worst, e.max_rel);
    }
    return worst;
}

}  // namespace vkf::test
