#include "host/ops/attention_naive.hpp"
#include "base/format.hpp"

#include "base/error.hpp"
#include "host/quant/kv_quant.hpp"
#include "host/util/math.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace vkf {

namespace {

constexpr std::uint64_t kScoreBytes = 4;  // scores are float32 whatever the storage dtype
// The scores pass binds Q, K, the scores, the slopes and the key lengths (the other passes
// fewer); where the device allows fewer, its PACKED_TABLES variant binds Q, K and the scores
// with the slopes and key lengths after them.
constexpr std::uint32_t kScoresBindings = 5;
constexpr std::uint32_t kPackedScoresBindings = 3;

bool packed_tables(const ComputeLimits& limits) {
    return limits.storage_buffers < kScoresBindings;
}

// The tables after the scores (PACKED_TABLES, or any paged batch): the slope table (n_head
// floats), then the key counts or the sequence table.
std::uint64_t tables_bytes(const AttentionShape& shape, const std::optional<PagedKv>& paged) {
    return 4 * std::uint64_t{shape.n_head} +
           (paged ? paged_sequence_table_bytes(shape.batch, *paged) : 4 * std::uint64_t{shape.batch});
}

bool tables_after_scores(const ComputeLimits& limits, const std::optional<PagedKv>& paged) {
    return packed_tables(limits) || paged.has_value();
}

std::uint64_t saturating_product(std::initializer_list<std::uint64_t> factors) {
    std::uint64_t product = 1;
    for (std::uint64_t f : factors) {
        if (f != 0 && product > std::numeric_limits<std::uint64_t>::max() / f) {
            return std::numeric_limits<std::uint64_t>::max();
        }
        product *= f;
    }
    return product;
}

std::string q_shape_text(const AttentionShape& s) {
    return shape_text({s.batch, s.q_len, s.n_head, s.head_dim});
}
std::string kv_shape_text(const AttentionShape& s) {
    return shape_text({s.batch, s.kv_len, s.n_kv_head, s.head_dim});
}

// The widest 1-D workgroup of at most `wanted` invocations the device allows.
std::uint32_t workgroup_width(const ComputeLimits& limits, std::uint32_t wanted) {
    return std::max<std::uint32_t>(1, std::min({wanted, limits.workgroup_invocations, limits.workgroup_size[0]}));
}

}  // namespace

std::uint64_t naive_attention_scores_bytes(const AttentionShape& shape) {
    return saturating_product({shape.batch, shape.n_head, shape.q_len, shape.kv_len, kScoreBytes});
}

std::optional<std::string> naive_attention_impossible(const ComputeLimits& limits, const AttentionParams& params,
                                                      const std::optional<PagedKv>& paged) {
    if (auto shortfall = storage_buffers_shortfall(limits, kPackedScoresBindings, "naive attention")) {
        return shortfall;
    }
    const bool packed = tables_after_scores(limits, paged);
    const std::uint64_t scores = naive_attention_scores_bytes(params.shape);
    const std::uint64_t tables = packed ? tables_bytes(params.shape, paged) : 0;
    const std::uint64_t bytes = scores > std::numeric_limits<std::uint64_t>::max() - tables
                                    ? std::numeric_limits<std::uint64_t>::max()
                                    : scores + tables;
    if (bytes > limits.storage_buffer_range) {
        const AttentionShape& s = params.shape;
        return "naive attention: scores buffer of " + fmt::to_string(bytes) + " bytes (float32 " +
               shape_text({s.batch, s.n_head, s.q_len, s.kv_len}) +
               (packed ? " and the slope and key-count tables" : "") + ") exceeds maxStorageBufferRange " +
               fmt::to_string(limits.storage_buffer_range);
    }
    return std::nullopt;
}

NaiveAttention::NaiveAttention(Context& ctx, const AttentionParams& params, DType dtype, std::optional<PagedKv> paged,
                               QuantFormat k_quant, QuantFormat v_quant)
    : shape_(params.shape), dtype_(dtype), k_quant_(k_quant), v_quant_(v_quant), paged_(paged) {
    validate(params);
    check_head_dim(shape_.head_dim);
    // KV_QUANT: fp32 Q/O, K and V each f16 or quantized.
    const bool quant = k_quant != QuantFormat::None || v_quant != QuantFormat::None;
    if (quant) {
        if (dtype != DType::F32) {
            throw Error(fmt::format("naive attention: a {}/{} K/V cache needs f32 Q/O, not {}", to_string(k_quant),
                                    to_string(v_quant), to_string(dtype)));
        }
        check_kv_quant_head_dim(k_quant, shape_.head_dim, "naive attention (K)");
        check_kv_quant_head_dim(v_quant, shape_.head_dim, "naive attention (V)");
    }
    const DType kv_dense = quant ? DType::F16 : dtype;
    const std::uint32_t row_values = shape_.n_kv_head * shape_.head_dim;
    k_row_bytes_ = kv_row_bytes(kv_dense, k_quant, row_values);
    v_row_bytes_ = kv_row_bytes(kv_dense, v_quant, row_values);
    if (paged_) {
        check_paged(shape_, *paged_);
        if (!params.kv_lens.empty()) {
            throw Error("naive attention: a paged batch's key counts come from its sequence table, not params.kv_lens");
        }
    }
    const ComputeLimits& limits = ctx.limits();
    max_range_ = limits.storage_buffer_range;
    if (const auto reason = naive_attention_impossible(limits, params, paged_)) {
        throw Error(*reason);
    }
    // Each tensor is bound whole, so each must fit one range too.
    const std::uint64_t esize = element_size(dtype);
    auto check_tensor = [&](const char* name, std::uint64_t elements, const std::string& shape,
                            std::uint64_t row_bytes = 0) {
        const std::uint64_t bytes =
            row_bytes == 0 ? elements * esize : elements / (shape_.n_kv_head * shape_.head_dim) * row_bytes;
        if (bytes > limits.storage_buffer_range) {
            throw Error("naive attention: " + std::string(name) + " of shape " + shape + " in " + to_string(dtype) +
                        " is " + fmt::to_string(bytes) + " bytes, over maxStorageBufferRange " +
                        fmt::to_string(limits.storage_buffer_range));
        }
    };
    if (paged_) {
        // The pool's size is record()'s to check.
        check_tensor("Q", std::uint64_t{paged_->q_rows} * shape_.n_head * shape_.head_dim,
                     shape_text({paged_->q_rows, shape_.n_head, shape_.head_dim}));
    } else {
        check_tensor("Q", q_element_count(shape_), q_shape_text(shape_));
        check_tensor("K", kv_element_count(shape_), kv_shape_text(shape_), k_row_bytes_);
        check_tensor("V", kv_element_count(shape_), kv_shape_text(shape_), v_row_bytes_);
    }

    push_ = make_attention_push(params);
    if (paged_) {
        push_.flags |= VKF_ATTN_FLAG_PAGED | VKF_ATTN_FLAG_KV_LENS;
        push_.block_size = paged_->block_size;
        push_.blocks_per_seq = paged_->blocks_per_seq;
        push_.q_rows = paged_->q_rows;
    }

    const bool f16 = dtype == DType::F16;
    const std::uint32_t head_pairs = shape_.head_dim / 2;
    scores_workgroup_ = workgroup_width(limits, 64);
    pv_workgroup_ = workgroup_width(limits, std::min<std::uint32_t>(head_pairs, 64));
    // The softmax reductions halve the workgroup: a power of two, one float of shared
    // memory per invocation.
    softmax_workgroup_ =
        std::bit_floor(workgroup_width(limits, std::min<std::uint32_t>(256, limits.shared_memory / 4)));

    std::vector<SpecConstant> head_dim_constant = {{VKF_ATTN_SPEC_D, shape_.head_dim}};
    if (quant) {
        head_dim_constant.push_back({VKF_ATTN_SPEC_K_FORMAT, kv_format_code(k_quant)});
        head_dim_constant.push_back({VKF_ATTN_SPEC_V_FORMAT, kv_format_code(v_quant)});
    }
    packed_ = packed_tables(limits);
    scores_pipeline_ = &ctx.pipeline(PipelineDesc{
        .code = &shaders::variant("attention_naive",
                                  {"SCORES", {"PACKED_TABLES", packed_}, {"STORAGE_F16", f16}, {"KV_QUANT", quant}}),
        .workgroup_size = {scores_workgroup_, 1, 1},
        .constants = head_dim_constant,
        .push_constant_layout = AttentionPush::layout,
        .binding_count = packed_ ? kPackedScoresBindings : kScoresBindings});
    softmax_pipeline_ = &ctx.pipeline(PipelineDesc{.code = &shaders::variant("attention_naive", {"SOFTMAX"}),
                                                   .workgroup_size = {softmax_workgroup_, 1, 1},
                                                   .push_constant_layout = AttentionPush::layout,
                                                   .binding_count = 1,
                                                   .shared_memory_bytes = softmax_workgroup_ * 4});
    pv_pipeline_ = &ctx.pipeline(
        PipelineDesc{.code = &shaders::variant("attention_naive", {"PV", {"STORAGE_F16", f16}, {"KV_QUANT", quant}}),
                     .workgroup_size = {pv_workgroup_, 1, 1},
                     .constants = head_dim_constant,
                     .push_constant_layout = AttentionPush::layout,
                     .binding_count = 3});

    if (tables_after_scores(limits, paged_)) {
        // The tables after the scores; the shader reads each only when its flag is set. A
        // paged batch's sequence table is copied there by record().
        const std::uint64_t scores_bytes = naive_attention_scores_bytes(shape_);
        scores_ = ctx.create_buffer(scores_bytes + tables_bytes(shape_, paged_), MemoryKind::Device,
                                    "naive attention scores");
        if (!params.slopes.empty()) {
            ctx.upload(scores_, params.slopes, scores_bytes);
        }
        if (!params.kv_lens.empty()) {
            ctx.upload(scores_, params.kv_lens, scores_bytes + 4 * std::uint64_t{shape_.n_head});
        }
        if (packed_) {
            return;
        }
    } else {
        scores_ = ctx.create_buffer(naive_attention_scores_bytes(shape_), MemoryKind::Device, "naive attention scores");
    }
    // Tables the shader reads only when their flag is set still need a buffer bound.
    slopes_ = ctx.create_buffer(4 * std::max<std::uint64_t>(params.slopes.size(), 1), MemoryKind::Device,
                                "naive attention slopes");
    if (!params.slopes.empty()) {
        ctx.upload(slopes_, params.slopes);
    }
    kv_lens_ = ctx.create_buffer(4 * std::max<std::uint64_t>(params.kv_lens.size(), 1), MemoryKind::Device,
                                 "naive attention kv lens");
    if (!params.kv_lens.empty()) {
        ctx.upload(kv_lens_, params.kv_lens);
    }
}

void NaiveAttention::record(CommandList& list, BufferRange q, BufferRange k, BufferRange v, BufferRange o,
                            BufferRange sequences) const {
    const std::uint64_t esize = element_size(dtype_);
    auto check_size = [&](const char* name, const BufferRange& r, std::uint64_t elements, const std::string& shape,
                          std::uint64_t row_bytes = 0) {
        const std::uint64_t bytes =
            row_bytes == 0 ? elements * esize : elements / (shape_.n_kv_head * shape_.head_dim) * row_bytes;
        if (r.size != bytes) {
            const QuantFormat quant = name[0] == 'K' ? k_quant_ : name[0] == 'V' ? v_quant_ : QuantFormat::None;
            const bool kv_quant = k_quant_ != QuantFormat::None || v_quant_ != QuantFormat::None;
            const char* type = quant != QuantFormat::None                       ? to_string(quant)
                               : kv_quant && (name[0] == 'K' || name[0] == 'V') ? "f16"
                                                                                : to_string(dtype_);
            throw Error(fmt::format("naive attention: {} range is {} bytes but shape {} in {} needs {}", name, r.size,
                                    shape, type, bytes));
        }
    };
    if (paged_.has_value() != (sequences.buffer != nullptr)) {
        throw Error(paged_ ? "naive attention: planned for a paged batch, but record() got no sequence table"
                           : "naive attention: record() got a sequence table, but the op is not paged");
    }
    AttentionPush push = push_;
    if (paged_) {
        const std::uint64_t table_bytes = paged_sequence_table_bytes(shape_.batch, *paged_);
        if (sequences.size < table_bytes) {
            throw Error("naive attention: the sequence-table range holds " + fmt::to_string(sequences.size) +
                        " bytes; " + fmt::to_string(shape_.batch) + " sequences need " + fmt::to_string(table_bytes));
        }
        const std::uint64_t rows = paged_->q_rows;
        const std::string q_shape = shape_text({paged_->q_rows, shape_.n_head, shape_.head_dim});
        check_size("Q", q, rows * shape_.n_head * shape_.head_dim, q_shape);
        check_size("O", o, rows * shape_.n_head * shape_.head_dim, q_shape);
        const std::uint64_t block_rows = paged_->block_size;
        const std::uint64_t blocks = k.size / (block_rows * k_row_bytes_);
        if (blocks == 0 || blocks > UINT32_MAX || k.size % (block_rows * k_row_bytes_) != 0 ||
            v.size != blocks * block_rows * v_row_bytes_ || std::max(k.size, v.size) > max_range_) {
            throw Error("naive attention: paged K and V ranges of " + fmt::to_string(k.size) + " and " +
                        fmt::to_string(v.size) + " bytes are not one pool of whole blocks of " +
                        shape_text({paged_->block_size, shape_.n_kv_head, shape_.head_dim}) + " in " +
                        to_string(dtype_) + " within maxStorageBufferRange " + fmt::to_string(max_range_));
        }
        push.pool_blocks = static_cast<std::uint32_t>(blocks);
        // PV reads the table after the scores and the slope table.
        const std::uint64_t offset = naive_attention_scores_bytes(shape_) + 4 * std::uint64_t{shape_.n_head};
        list.copy(BufferRange{.buffer = sequences.buffer, .offset = sequences.offset, .size = table_bytes},
                  BufferRange{.buffer = &scores_, .offset = offset, .size = table_bytes},
                  "naive attention sequence table");
    } else {
        check_size("Q", q, q_element_count(shape_), q_shape_text(shape_));
        check_size("K", k, kv_element_count(shape_), kv_shape_text(shape_), k_row_bytes_);
        check_size("V", v, kv_element_count(shape_), kv_shape_text(shape_), v_row_bytes_);
        check_size("O", o, q_element_count(shape_), q_shape_text(shape_));
    }

    const BufferRange scores = whole(scores_);
    const std::uint32_t heads = shape_.batch * shape_.n_head;

    std::vector<Binding> scores_bindings = {{q, Access::Read}, {k, Access::Read}};
    if (packed_) {
        scores_bindings.push_back({scores, Access::ReadWrite});  // scores written, tables read
    } else {
        scores_bindings.insert(scores_bindings.end(), {{whole(slopes_), Access::Read},
                                                       {paged_ ? sequences : whole(kv_lens_), Access::Read},
                                                       {scores, Access::Write}});
    }
    list.dispatch(
        Dispatch{.pipeline = scores_pipeline_,
                 .bindings = scores_bindings,
                 .push_constants = push_bytes(push),
                 .groups = {narrow_u32(ceil_div(shape_.kv_len, scores_workgroup_), "naive attention key groups"),
                            shape_.q_len, heads},
                 .label = "naive attention scores"});

    const Binding softmax_bindings[] = {{scores, Access::ReadWrite}};
    list.dispatch(Dispatch{.pipeline = softmax_pipeline_,
                           .bindings = softmax_bindings,
                           .push_constants = push_bytes(push),
                           .groups = {shape_.q_len, shape_.n_head, shape_.batch},
                           .label = "naive attention softmax"});

    const Binding pv_bindings[] = {
        {scores, Access::Read},
        {v, Access::Read},
        {o, Access::Write},
    };
    list.dispatch(
        Dispatch{.pipeline = pv_pipeline_,
                 .bindings = pv_bindings,
                 .push_constants = push_bytes(push),
                 .groups = {narrow_u32(ceil_div(shape_.head_dim / 2, pv_workgroup_), "naive attention column groups"),
                            shape_.q_len, heads},
                 .label = "naive attention P.V"});
}

}  // namespace vkf
