// The attention op (host/ops/attention.hpp): pipelines, buffers and recording. Its planning
// is in attention_plan.cpp, the paged batches' sequence table in attention_paged.cpp.
#include "host/ops/attention.hpp"
#include "host/ops/attention_detail.hpp"

#include "base/error.hpp"
#include "host/ops/device_tensor.hpp"
#include "host/quant/kv_quant.hpp"
#include "host/util/math.hpp"
#include "shaders/variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace vkf {

using attention_detail::attention_partials_bytes;
using attention_detail::attention_tables_bytes;
using attention_detail::bytes_text;

namespace {

// Elements of Q (and O) in a paged batch: its q_rows packed rows.
std::uint64_t paged_q_elements(const AttentionShape& shape, const PagedKv& paged) {
    return std::uint64_t{paged.q_rows} * shape.n_head * shape.head_dim;
}

// Blocks in a paged batch's K or V range; throws unless it is a whole, nonzero number of them
// that one storage-buffer range can bind.
std::uint32_t pool_blocks(const char* name, const BufferRange& r, const AttentionShape& shape, const PagedKv& paged,
                          const std::string& type, std::uint64_t row_bytes, std::uint64_t max_range) {
    const std::uint64_t block_bytes = std::uint64_t{paged.block_size} * row_bytes;
    const std::uint64_t blocks = r.size / block_bytes;
    if (r.size == 0 || r.size % block_bytes != 0 || blocks > UINT32_MAX) {
        throw Error("attention: paged " + std::string(name) + " range is " + bytes_text(r.size) +
                    ", not a whole number of blocks of " + fmt::to_string(paged.block_size) + " keys x " +
                    fmt::to_string(shape.n_kv_head) + " heads x " + fmt::to_string(shape.head_dim) + " in " + type +
                    " (" + bytes_text(block_bytes) + ")");
    }
    if (r.size > max_range) {
        throw Error("attention: paged " + std::string(name) + " pool is " + bytes_text(r.size) +
                    ", over the device's maxStorageBufferRange of " + bytes_text(max_range));
    }
    return static_cast<std::uint32_t>(blocks);
}

}  // namespace

AttentionPush make_attention_push(const AttentionParams& params) {
    const AttentionShape& s = params.shape;
    std::uint32_t flags = 0;
    flags |= params.mask == MaskMode::Causal ? VKF_ATTN_FLAG_CAUSAL_MASK : 0;
    flags |= !params.slopes.empty() ? VKF_ATTN_FLAG_SLOPE_TABLE : 0;
    flags |= !params.kv_lens.empty() ? VKF_ATTN_FLAG_KV_LENS : 0;
    flags |=
        params.alibi == AlibiMode::Causal || params.alibi == AlibiMode::FalconBf16 ? VKF_ATTN_FLAG_ALIBI_CAUSAL : 0;
    flags |= params.alibi == AlibiMode::FalconBf16 ? VKF_ATTN_FLAG_ALIBI_KEY_BF16 : 0;
    flags |= params.alibi_train_len != 0 ? VKF_ATTN_FLAG_ALIBI_DYNAMIC : 0;
    flags |= params.alibi == AlibiMode::Symmetric ? VKF_ATTN_FLAG_ALIBI_SYMMETRIC : 0;
    return AttentionPush{.batch = s.batch,
                         .q_len = s.q_len,
                         .kv_len = s.kv_len,
                         .n_head = s.n_head,
                         .n_kv_head = s.n_kv_head,
                         .flags = flags,
                         .scale = effective_scale(params),
                         .max_bias = params.max_bias,
                         .alibi_pow2 = alibi_pow2_floor(s.n_head),
                         .kv_split_len = s.kv_len,
                         .n_splits = 1,
                         .alibi_train_len = params.alibi_train_len,
                         .block_size = 0,
                         .blocks_per_seq = 0,
                         .q_rows = s.batch * s.q_len,
                         .pool_blocks = 0,
                         .window = params.window};
}

namespace {

bool quantized(const AttentionOptions& options) {
    return options.k_quant != QuantFormat::None || options.v_quant != QuantFormat::None;
}

// The K/V storage, or vkf::Error unless the kernels have a variant for it: STORAGE_F16 (all
// fp16), KV_F16 (fp16 K/V), KV_QUANT (K and V each fp16 or quantized, fp32 Q/O), none of them
// (fp32).
DType checked_kv_dtype(DType dtype, const AttentionOptions& options, std::uint32_t head_dim) {
    if (quantized(options)) {
        const DType kv_dtype = options.kv_dtype.value_or(DType::F16);
        if (dtype != DType::F32 || kv_dtype != DType::F16) {
            throw Error(fmt::format(
                "attention: K in {} and V in {} need f32 Q/O and f16 for a side that is not "
                "quantized; got Q/O in {}, K/V in {}",
                to_string(options.k_quant), to_string(options.v_quant), to_string(dtype), to_string(kv_dtype)));
        }
        check_kv_quant_head_dim(options.k_quant, head_dim, "attention (K)");
        check_kv_quant_head_dim(options.v_quant, head_dim, "attention (V)");
        return kv_dtype;
    }
    const DType kv_dtype = options.kv_dtype.value_or(dtype);
    const bool supported = (dtype == DType::F16 && kv_dtype == DType::F16) ||
                           (dtype == DType::F32 && (kv_dtype == DType::F16 || kv_dtype == DType::F32));
    if (!supported) {
        throw Error(
            fmt::format("attention: Q/O in {} with K/V in {} is not supported; supported: f32 with f32 K/V, "
                        "f16 with f16 K/V, f32 with f16 or quantized K/V",
                        to_string(dtype), to_string(kv_dtype)));
    }
    return kv_dtype;
}

}  // namespace

AttentionPlan plan_attention_call(const Context& ctx, const AttentionParams& params, DType dtype,
                                  const AttentionOptions& options) {
    const DType kv_dtype = checked_kv_dtype(dtype, options, params.shape.head_dim);
    validate(params);
    const AttentionDevice device = attention_device(ctx);
    AttentionPlan plan = plan_attention(device, params.shape, options, params.window);
    // fp16 arithmetic (tiled kernel, shaderFloat16) wherever K and V are fp16: their precision
    // bounds the products already. Q is scaled in fp32 and then rounded as K is, and O comes
    // from the fp32 accumulator, so fp32 Q/O over a model's fp16 KV cache (decode and prefill
    // in every model session) takes it too. Over an fp16 cache with fp32 Q/O, CPU devices keep
    // fp32: llvmpipe emulates fp16 (each operation converted to fp32 and back, as for the
    // matmul in matmul_plan.cpp), so it would only cost time, and Auto gives them the rows
    // kernel anyway; VKF_LIMITS=gpu_attention plans lavapipe as a GPU (the tests).
    const bool quant = quantized(options);
    const bool all_f16 = !quant && dtype == DType::F16 && kv_dtype == DType::F16;
    const bool kv_f16 = !quant && dtype == DType::F32 && kv_dtype == DType::F16;
    plan.fp16_arithmetic = plan.kernel == AttentionKernel::Tiled && ctx.limits().fp16_arithmetic &&
                           (all_f16 || ((kv_f16 || quant) && !device.cpu));
    return plan;
}

Attention::Attention(Context& ctx, const AttentionParams& params, DType dtype, AttentionOptions options)
    : Attention(ctx, params, dtype, options, plan_attention_call(ctx, params, dtype, options)) {}

Attention::Attention(Context& ctx, const AttentionParams& params, DType dtype, AttentionOptions options,
                     const AttentionPlan& plan)
    : ctx_(ctx),
      shape_(params.shape),
      dtype_(dtype),
      kv_dtype_(checked_kv_dtype(dtype, options, params.shape.head_dim)),
      k_quant_(options.k_quant),
      v_quant_(options.v_quant),
      plan_(plan) {
    validate(params);
    const bool quant = quantized(options);
    const bool all_f16 = !quant && dtype_ == DType::F16 && kv_dtype_ == DType::F16;
    const bool kv_f16 = !quant && dtype_ == DType::F32 && kv_dtype_ == DType::F16;
    push_ = make_attention_push(params);
    push_.kv_split_len = plan_.kv_split_len;
    push_.n_splits = plan_.n_splits;
    paged_ = options.paged;
    external_kv_lens_ = options.external_kv_lens || paged_.has_value();
    if (paged_) {
        push_.flags |= VKF_ATTN_FLAG_PAGED;
        push_.block_size = paged_->block_size;
        push_.blocks_per_seq = paged_->blocks_per_seq;
        push_.q_rows = paged_->q_rows;
    }
    if (external_kv_lens_) {
        if (!params.kv_lens.empty()) {
            throw Error("attention: key counts come either from params.kv_lens or from a buffer given to record()");
        }
        push_.flags |= VKF_ATTN_FLAG_KV_LENS | (plan_.n_splits > 1 ? VKF_ATTN_FLAG_SPLIT_BY_LENGTH : 0u);
    }

    const std::uint64_t range = ctx.limits().storage_buffer_range;
    auto check_tensor = [&](const char* name, std::uint64_t elements, std::uint64_t element_bytes) {
        const std::uint64_t bytes = elements * element_bytes;
        if (bytes > range) {
            throw Error("attention: " + std::string(name) + " is " + bytes_text(bytes) +
                        ", over the device's maxStorageBufferRange of " + bytes_text(range) +
                        "; split the batch or the sequence");
        }
    };
    // A paged batch's pool has the size record() is given (checked there).
    check_tensor("Q", paged_ ? paged_q_elements(shape_, *paged_) : q_element_count(shape_), element_size(dtype_));
    if (!paged_) {
        const std::uint64_t key_rows = kv_element_count(shape_) / (shape_.n_kv_head * shape_.head_dim);
        check_tensor("K", key_rows, k_row_bytes());
        check_tensor("V", key_rows, v_row_bytes());
    }

    // PACKED_TABLES writes partial rows even unsplit (the combine pass normalizes them).
    const bool split = plan_.n_splits > 1 || plan_.packed_tables;
    const bool packed = plan_.packed_tables;
    const bool f16 = all_f16;  // the Q/O storage; also the combine pass's output
    const bool rows = plan_.kernel == AttentionKernel::Rows;
    std::vector<SpecConstant> constants;
    const SpirvCode* code = nullptr;
    if (rows) {
        // Rows of 4n + 2 elements do not start on a quad: read them as pairs.
        code = &shaders::variant("attention_rows", {{"SUBGROUP_LOADS", plan_.subgroup_loads > 0},
                                                    {"SPLIT_KV", split},
                                                    {"PACKED_TABLES", packed},
                                                    {"STORAGE_F16", f16},
                                                    {"KV_F16", kv_f16},
                                                    {"KV_QUANT", quant},
                                                    {"PAIR_LOADS", shape_.head_dim % 4 != 0}});
        constants = {{VKF_ATTN_ROWS_SPEC_SPLIT_LANES, plan_.threads_per_row},
                     {VKF_ATTN_ROWS_SPEC_BK, plan_.keys_per_tile},
                     {VKF_ATTN_ROWS_SPEC_R, plan_.rows_per_invocation},
                     {VKF_ATTN_SPEC_D, shape_.head_dim},
                     {VKF_ATTN_ROWS_SPEC_SG, std::max<std::uint32_t>(plan_.subgroup_loads, 1)}};
    } else {
        code =
            &shaders::variant("attention", {{"SPLIT_KV", split},
                                            {"PACKED_TABLES", packed},
                                            {"STORAGE_F16", f16},
                                            {"ARITH_F16", plan_.fp16_arithmetic},
                                            {"KV_F16", kv_f16},
                                            {"KV_QUANT", quant},
                                            {"SUBGROUP_REDUCE", plan_.subgroup_reduce > 0 || plan_.subgroup_any_size},
                                            {"SUBGROUP_ANY_SIZE", plan_.subgroup_any_size}});
        constants = {{VKF_ATTN_SPEC_BR, plan_.rows_per_group},
                     {VKF_ATTN_SPEC_BC, plan_.keys_per_tile},
                     {VKF_ATTN_SPEC_TPR, plan_.threads_per_row},
                     {VKF_ATTN_SPEC_D, shape_.head_dim}};
        if (plan_.subgroup_any_size) {
            constants.push_back({VKF_ATTN_SPEC_SG_EXPECT, options.expect_subgroup_path});
        }
    }
    if (quant) {
        constants.push_back({VKF_ATTN_SPEC_K_FORMAT, kv_format_code(k_quant_)});
        constants.push_back({VKF_ATTN_SPEC_V_FORMAT, kv_format_code(v_quant_)});
    }
    attention_ =
        &ctx.pipeline(PipelineDesc{.code = code,
                                   .workgroup_size = {plan_.workgroup_size, 1, 1},
                                   .constants = constants,
                                   .push_constant_layout = AttentionPush::layout,
                                   .binding_count = packed ? kPackedAttentionBindings : kAttentionBindings,
                                   .shared_memory_bytes = plan_.shared_bytes,
                                   .required_subgroup_size = rows ? plan_.subgroup_loads : plan_.subgroup_reduce,
                                   .subgroup_size_checked = !rows && plan_.subgroup_any_size});
    if (split) {
        combine_ = &ctx.pipeline(PipelineDesc{
            .code = &shaders::variant("attention_combine", {{"STORAGE_F16", f16}}),
            .workgroup_size = {std::min<std::uint32_t>(shape_.head_dim / 2, ctx.limits().workgroup_invocations), 1, 1},
            .constants = {{VKF_ATTN_SPEC_D, shape_.head_dim}},
            .push_constant_layout = AttentionPush::layout,
            .binding_count = 3});
        const std::uint64_t partial_bytes = attention_partials_bytes(shape_, plan_.n_splits);
        partials_ = ctx.create_buffer(partial_bytes + (packed ? attention_tables_bytes(shape_, options) : 0),
                                      MemoryKind::Device, "attention partials");
    }
    if (packed) {
        // The slope table and the key counts after the partial records (PACKED_TABLES); the
        // shader reads each only when its flag is set. External key counts (or a sequence
        // table) are copied there by record().
        tables_offset_ = attention_partials_bytes(shape_, plan_.n_splits);
        if (!params.slopes.empty()) {
            ctx.upload(partials_, params.slopes, tables_offset_);
        }
        if (!params.kv_lens.empty()) {
            ctx.upload(partials_, params.kv_lens, tables_offset_ + std::uint64_t{4} * shape_.n_head);
        }
        return;
    }

    // Tables the shader reads only when their flag is set still need a buffer bound.
    const std::size_t n_slopes = std::max<std::size_t>(params.slopes.size(), 1);
    slopes_ = ctx.create_buffer(n_slopes * 4, MemoryKind::Device, "alibi slopes");
    if (!params.slopes.empty()) {
        ctx.upload(slopes_, params.slopes);
    }
    const std::size_t n_lens = std::max<std::size_t>(params.kv_lens.size(), 1);
    kv_lens_ = ctx.create_buffer(n_lens * 4, MemoryKind::Device, "kv lens");
    if (!params.kv_lens.empty()) {
        ctx.upload(kv_lens_, params.kv_lens);
    }
}

std::uint64_t Attention::k_row_bytes() const {
    return kv_row_bytes(kv_dtype_, k_quant_, shape_.n_kv_head * shape_.head_dim);
}

std::uint64_t Attention::v_row_bytes() const {
    return kv_row_bytes(kv_dtype_, v_quant_, shape_.n_kv_head * shape_.head_dim);
}

std::uint64_t Attention::scratch_bytes() const {
    return (slopes_.valid() ? slopes_.size() : 0) + (kv_lens_.valid() ? kv_lens_.size() : 0) +
           (partials_.valid() ? partials_.size() : 0);
}

void Attention::record(CommandList& list, BufferRange q, BufferRange k, BufferRange v, BufferRange o,
                       BufferRange kv_lens) const {
    if (external_kv_lens_ != (kv_lens.buffer != nullptr)) {
        throw Error(external_kv_lens_ ? "attention: planned for key counts from a buffer, but record() got none"
                                      : "attention: record() got a key-count buffer the plan does not use "
                                        "(AttentionOptions::external_kv_lens)");
    }
    const std::uint64_t table_bytes =
        paged_ ? paged_sequence_table_bytes(shape_.batch, *paged_) : std::uint64_t{4} * shape_.batch;
    if (external_kv_lens_ && kv_lens.size < table_bytes) {
        throw Error("attention: the " + std::string(paged_ ? "sequence-table" : "key-count") + " range holds " +
                    bytes_text(kv_lens.size) + "; " + fmt::to_string(shape_.batch) +
                    (paged_ ? " sequences need " : " batches need ") + bytes_text(table_bytes));
    }
    auto check_size = [&](const char* name, const BufferRange& r, std::uint64_t elements) {
        const bool q_or_o = name[0] == 'Q' || name[0] == 'O';
        const QuantFormat quant = q_or_o ? QuantFormat::None : name[0] == 'K' ? k_quant_ : v_quant_;
        const std::string type = quant != QuantFormat::None ? to_string(quant) : to_string(q_or_o ? dtype_ : kv_dtype_);
        const std::uint64_t bytes =
            q_or_o ? elements * element_size(dtype_)
                   : elements / (shape_.n_kv_head * shape_.head_dim) * (name[0] == 'K' ? k_row_bytes() : v_row_bytes());
        if (r.size != bytes) {
            throw Error("attention: " + std::string(name) + " range is " + bytes_text(r.size) + " but the shape [" +
                        fmt::to_string(shape_.batch) + ", " + fmt::to_string(q_or_o ? shape_.q_len : shape_.kv_len) +
                        ", " + fmt::to_string(q_or_o ? shape_.n_head : shape_.n_kv_head) + ", " +
                        fmt::to_string(shape_.head_dim) + "] in " + type + " needs " + bytes_text(bytes));
        }
    };
    AttentionPush push = push_;
    if (paged_) {
        const std::uint64_t q_bytes = paged_q_elements(shape_, *paged_) * element_size(dtype_);
        for (const auto& [name, r] : {std::pair{"Q", q}, std::pair{"O", o}}) {
            if (r.size != q_bytes) {
                throw Error("attention: paged " + std::string(name) + " range is " + bytes_text(r.size) + " but [" +
                            fmt::to_string(paged_->q_rows) + " rows, " + fmt::to_string(shape_.n_head) + ", " +
                            fmt::to_string(shape_.head_dim) + "] in " + to_string(dtype_) + " needs " +
                            bytes_text(q_bytes));
            }
        }
        const std::uint64_t range = ctx_.limits().storage_buffer_range;
        const auto type = [&](QuantFormat quant) {
            return quant != QuantFormat::None ? std::string(to_string(quant)) : std::string(to_string(kv_dtype_));
        };
        push.pool_blocks = pool_blocks("K", k, shape_, *paged_, type(k_quant_), k_row_bytes(), range);
        const std::uint32_t v_blocks = pool_blocks("V", v, shape_, *paged_, type(v_quant_), v_row_bytes(), range);
        if (v_blocks != push.pool_blocks) {
            throw Error(
                fmt::format("attention: paged K and V pools differ: {} and {} blocks", push.pool_blocks, v_blocks));
        }
    } else {
        check_size("Q", q, q_element_count(shape_));
        check_size("K", k, kv_element_count(shape_));
        check_size("V", v, kv_element_count(shape_));
        check_size("O", o, q_element_count(shape_));
    }

    const bool split = plan_.n_splits > 1 || plan_.packed_tables;
    // Rows kernel: the invocations of a row take threads_per_row consecutive splits.
    const std::uint32_t split_groups =
        plan_.kernel == AttentionKernel::Rows ? plan_.n_splits / plan_.threads_per_row : plan_.n_splits;
    std::vector<Binding> bindings = {{q, Access::Read}, {k, Access::Read}, {v, Access::Read}};
    if (plan_.packed_tables) {
        // Partial rows written, the tables after them read: one binding.
        if (external_kv_lens_) {
            const std::uint64_t lens_offset = tables_offset_ + std::uint64_t{4} * shape_.n_head;
            list.copy(BufferRange{.buffer = kv_lens.buffer, .offset = kv_lens.offset, .size = table_bytes},
                      BufferRange{.buffer = &partials_, .offset = lens_offset, .size = table_bytes},
                      paged_ ? "attention sequence table" : "attention key counts");
        }
        bindings.push_back({whole(partials_), Access::ReadWrite});
    } else {
        bindings.push_back({split ? whole(partials_) : o, Access::Write});
        bindings.push_back({whole(slopes_), Access::Read});
        bindings.push_back({external_kv_lens_ ? kv_lens : whole(kv_lens_), Access::Read});
    }
    list.dispatch(Dispatch{
        .pipeline = attention_,
        .bindings = bindings,
        .push_constants = push_bytes(push),
        .groups = {narrow_u32(ceil_div(shape_.q_len, plan_.rows_per_group), "attention row groups"), shape_.n_head,
                   narrow_u32(std::uint64_t{shape_.batch} * split_groups, "attention batch groups")},
        .label = plan_.n_splits > 1 ? "attention (split-KV)" : "attention"});
    if (split) {
        // The sequence table places a paged batch's rows; otherwise the binding is unread.
        const Binding combine_bindings[] = {
            {whole(partials_), Access::Read}, {o, Access::Write}, {paged_ ? kv_lens : whole(partials_), Access::Read}};
        list.dispatch(Dispatch{.pipeline = combine_,
                               .bindings = combine_bindings,
                               .push_constants = push_bytes(push),
                               .groups = {shape_.q_len, shape_.n_head, shape_.batch},
                               .label = "attention combine"});
    }
}

std::vector<float> attention(Context& ctx, const AttentionParams& params, std::span<const float> q,
                             std::span<const float> k, std::span<const float> v, DType dtype,
                             AttentionOptions options) {
    validate(params);
    const std::size_t nq = q_element_count(params.shape);
    const std::size_t nkv = kv_element_count(params.shape);
    if (q.size() != nq || k.size() != nkv || v.size() != nkv) {
        throw Error("attention: Q, K, V hold " + fmt::to_string(q.size()) + ", " + fmt::to_string(k.size()) + ", " +
                    fmt::to_string(v.size()) + " elements; the shape needs " + fmt::to_string(nq) + ", " +
                    fmt::to_string(nkv) + ", " + fmt::to_string(nkv));
    }
    const Attention op(ctx, params, dtype, options);
    const DeviceTensor qt = upload_tensor(ctx, q, dtype, "Q");
    const std::uint32_t d = params.shape.n_kv_head * params.shape.head_dim;  // a key row
    const DeviceTensor kt = upload_kv_tensor(ctx, k, op.kv_dtype(), op.k_quant(), d, "K");
    const DeviceTensor vt = upload_kv_tensor(ctx, v, op.kv_dtype(), op.v_quant(), d, "V");
    const DeviceTensor ot(ctx, nq, dtype, "O");
    auto list = ctx.command_list();
    op.record(*list, qt.range(), kt.range(), vt.range(), ot.range());
    ctx.submit(*list);
    return download_tensor(ctx, ot);
}

}  // namespace vkf
