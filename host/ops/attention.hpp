#pragma once
// Tiled ("flash") ALiBi attention on the GPU (shaders/attention.comp), FlashAttention-2
// style: a workgroup owns a tile of query rows of one (batch, head), streams K and V tiles
// through shared memory with an online softmax, and writes each output row once. Decoding
// shapes (few query rows, long KV) use a split-KV variant plus a combine pass. CPU devices
// get the rows kernel (shaders/attention_rows.comp, AttentionKernel below) instead.

#include "host/quant/quant_format.hpp"
#include "host/spec/attention_params.hpp"
#include "host/util/dtype.hpp"
#include "runtime/context.hpp"
#include "shaders/interface/attention.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf {

// The GPU kernels accept every even head size from 2 to kMaxHeadDim: the head size is a
// specialization constant, and tensors are read in element pairs (an fp16 pair is one 32-bit
// word, which is why odd sizes are refused). The tile table was tuned on kTunedHeadDims
// (multiples of 16: each lane of a row gets whole quads); other sizes take the same kernels
// with a padded last quad and guarded lanes.
inline constexpr std::uint32_t kMaxHeadDim = 256;
inline constexpr std::uint32_t kTunedHeadDims[] = {32, 64, 80, 96, 128, 256};
// Throws vkf::Error naming the head size and saying "even head sizes 2..256" unless it is one.
void check_head_dim(std::uint32_t head_dim);

// AttentionPush (push constants, shared by every attention kernel), VKF_ATTN_FLAG_* and the
// specialization-constant ids: shaders/interface/attention.h.
static_assert(sizeof(AttentionPush) == 68);

AttentionPush make_attention_push(const AttentionParams& params);

// Tiled: shared-memory K/V tiles, several invocations per query row (GPUs). Rows: no shared
// memory and no barriers, each invocation holds a few query rows in registers and reads K and
// V straight from memory, sharing the loads across a subgroup by shuffles when it can
// (shaders/attention_rows.comp); the fast one on CPU devices (llvmpipe), where every load
// costs per SIMD lane and barriers switch coroutines. Auto: Rows on CPU devices, else Tiled.
enum class AttentionKernel : std::uint32_t { Auto = 0, Tiled = 1, Rows = 2 };
const char* to_string(AttentionKernel kernel);

// What the plan needs to know of the device.
struct AttentionDevice {
    ComputeLimits limits;
    bool cpu = false;  // VkPhysicalDeviceType CPU
};
AttentionDevice attention_device(const Context& ctx);

// The tile configuration chosen for a device and a shape.
struct AttentionPlan {
    AttentionKernel kernel = AttentionKernel::Tiled;
    std::uint32_t rows_per_group = 0;       // Br: query rows per workgroup
    std::uint32_t keys_per_tile = 0;        // Bc: keys per shared-memory tile (rows: per softmax update)
    std::uint32_t threads_per_row = 0;      // invocations on one query row (rows: each its own KV split)
    std::uint32_t workgroup_size = 0;       // rows_per_group / rows_per_invocation * threads_per_row
    std::uint32_t rows_per_invocation = 1;  // rows kernel: query rows held by one invocation
    std::uint32_t subgroup_loads = 0;       // rows kernel: subgroup size whose lanes share K/V loads, 0: none
    // Tiled kernel: the subgroup size whose shuffles reduce each row's max and sum and broadcast
    // its probabilities (SUBGROUP_REDUCE; the pipeline requires full subgroups of it), 0: shared
    // memory. Where the device has subgroup arithmetic and shuffles, can require full subgroups,
    // and threads_per_row divides that size, which divides the workgroup.
    std::uint32_t subgroup_reduce = 0;
    // Tiled kernel without size control (most Vulkan 1.1 phones): SUBGROUP_REDUCE+SUBGROUP_ANY_SIZE,
    // created without a required size; each workgroup checks that its subgroups are full and
    // hold whole rows, and takes the shuffles or shared memory. Where the device has subgroup
    // arithmetic and shuffles but no size control, and its reported subgroup size (which
    // gl_SubgroupSize then is) would pass that check: threads_per_row divides it, it the workgroup.
    bool subgroup_any_size = false;
    // Tiled kernel: Q*K and P*V in fp16 with fp32 statistics (ARITH_F16). Set by the op, which
    // knows the storage: fp16 K and V on a device with shaderFloat16 (fp32 Q/O: GPUs only).
    bool fp16_arithmetic = false;
    std::uint32_t shared_bytes = 0;  // tiled: the fp32, shared-memory variant's (an upper bound)
    std::uint32_t n_splits = 1;      // > 1: split-KV decode path
    std::uint32_t kv_split_len = 0;
    // Devices with fewer than 6 storage buffers per shader stage (Vulkan guarantees 4): the
    // kernel binds Q, K, V and the partials buffer only, reads the slope table and the key
    // counts from that buffer's end (the PACKED_TABLES variants), and always writes partial
    // rows that the combine pass normalizes, even unsplit (n_splits 1).
    bool packed_tables = false;
    std::uint64_t loop_iterations = 0;  // per invocation, an upper bound (rows kernel)
    std::string describe() const;
};

// Paged, ragged batches: `shape.batch` sequences in one call. K and V are a block pool
// [n_blocks * block_size, n_kv_head, head_dim] (kv dtype) bound whole; Q and O are packed rows
// [q_rows, n_head, head_dim] (sequence b's rows start at its q_start); shape.q_len is the most
// rows any sequence has in a call (the grid), shape.kv_len the most keys a sequence can hold
// (blocks_per_seq * block_size). The key counts, row ranges and block tables come from the
// sequence table (record()'s kv_lens range), written by the caller before every submission.
// Query row i of sequence b sits at position kv_len[b] - q_len[b] + i (masks and ALiBi as in
// host/spec/attention_params.hpp, Jais' L = kv_len[b]); key j is pool row
// blocks[b][j / block_size] * block_size + j % block_size. Rows of O that belong to no
// sequence are not written. The kernels clamp what they read from the table (row ranges to
// q_rows and shape.q_len, key counts to shape.kv_len, block ids to the pool) so that a bad
// table gives wrong rows, never an access out of bounds.
struct PagedKv {
    std::uint32_t block_size = 16;     // keys per block (any value >= 1; the lead uses 16)
    std::uint32_t blocks_per_seq = 0;  // entries of each sequence's block table
    std::uint32_t q_rows = 0;          // rows of Q and O (sum of the sequences' q_len)
};

struct PagedSequence {
    std::uint32_t q_start = 0;              // its first row in Q and O
    std::uint32_t q_len = 0;                // its rows in this call, 1 .. shape.q_len
    std::uint32_t kv_len = 0;               // its keys after this call (q_len <= kv_len <= shape.kv_len)
    std::span<const std::uint32_t> blocks;  // its block table: ceil(kv_len / block_size) used entries
};

// The uint32 words of the sequence table for these sequences, in the layout the kernels read:
// kv_len[batch], q_start[batch], q_len[batch], then batch tables of blocks_per_seq entries
// (VKF_ATTN_SEQ_* in shaders/interface/attention.h; unused entries 0). Throws vkf::Error on
// inconsistent input (no sequences, too many or too few blocks, q_len 0 or > kv_len, kv_len
// past blocks_per_seq * block_size, rows out of range or shared by two sequences...).
//
// With a key window W (AttentionParams::window, passed here as `window`) the block table is a
// ring: a sequence's kv_len (its position after this call) may pass the capacity
// C = blocks_per_seq * block_size, and key j lives in entry (j / block_size) % blocks_per_seq.
// Its first query row sits at kv_len - q_len and sees keys from f = max(0, kv_len - q_len - W);
// the rule, checked per sequence: the blocks that keys f .. kv_len - 1 span,
// (kv_len - 1) / block_size - f / block_size + 1, are at most blocks_per_seq (so no two
// visible keys share a ring slot). W + q_len + block_size - 1 <= C always satisfies it. Past
// the capacity the table must have all blocks_per_seq entries. Without a window, kv_len <= C.
std::vector<std::uint32_t> paged_sequence_table(std::span<const PagedSequence> seqs, const PagedKv& paged,
                                                std::uint32_t window = 0);
std::uint64_t paged_sequence_table_bytes(std::uint32_t batch, const PagedKv& paged);
// Throws vkf::Error unless `paged` fits `shape`: block_size, blocks_per_seq and q_rows >= 1,
// shape.kv_len == blocks_per_seq * block_size.
void check_paged(const AttentionShape& shape, const PagedKv& paged);

struct AttentionOptions {
    // 0: chosen from the shape; 1: no split unless the driver's loop limit needs one;
    // n > 1: at least n splits.
    std::uint32_t force_splits = 0;
    AttentionKernel kernel = AttentionKernel::Auto;
    // Storage of K and V when it differs from that of Q and O (the `dtype` of Attention):
    // F16 with F32 Q and O reads a model's fp16 KV cache while its fp32 activations stay
    // fp32. Unset: the Q/O dtype. Softmax statistics are fp32 always; arithmetic is fp32
    // except F16 K/V on a device with fp16 arithmetic, where the tiled kernel computes Q*K and
    // P*V in fp16 (AttentionPlan::fp16_arithmetic; VKF_LIMITS=no_fp16_arithmetic: fp32); with
    // fp32 Q/O on GPUs only (VKF_LIMITS=gpu_attention: CPU devices too).
    std::optional<DType> kv_dtype = std::nullopt;
    // K and/or V block-quantized (q8_0, q4_0: the head-row layout of shaders/interface/kv_quant.h,
    // host/quant/kv_quant.hpp), each independently; the other one, if not quantized, is F16
    // (kv_dtype unset or F16). Q and O are then F32; the head size a multiple of 32. K and V are
    // dequantized to fp32 as they are read, so the kernels' error is measured against the
    // reference on the dequantized values (docs/DESIGN.md); arithmetic as for F16 K/V.
    QuantFormat k_quant = QuantFormat::None;
    QuantFormat v_quant = QuantFormat::None;
    // The valid key count of each batch comes from a uint32 buffer given to record() that the
    // caller writes before every submission, so that one recorded list serves a growing KV
    // cache: the shape's kv_len is then the capacity (K and V are bound whole) and query row
    // i sits at position count - q_len + i. Split-KV spreads the counted keys over the splits.
    bool external_kv_lens = false;
    // A paged, ragged batch (PagedKv); implies key counts from the buffer, like
    // external_kv_lens (which may be left false). The shape's kv_len is then
    // paged->blocks_per_seq * paged->block_size.
    std::optional<PagedKv> paged = std::nullopt;
    // Tests of the SUBGROUP_ANY_SIZE variant (AttentionPlan::subgroup_any_size): plan it
    // wherever the device has subgroup arithmetic and shuffles (the tiled kernel), also where
    // size control or the reported subgroup size would choose otherwise; and the path its check
    // must choose (VKF_ATTN_SG_EXPECT_*, shaders/interface/attention.h: a workgroup that takes
    // the other writes nothing, so that an output poisoned before the run shows it).
    bool force_subgroup_any_size = false;
    std::uint32_t expect_subgroup_path = VKF_ATTN_SG_EXPECT_EITHER;
};

// Storage buffers per shader stage of the attention kernels, and of their PACKED_TABLES
// variants (AttentionPlan::packed_tables), the least a device must allow.
inline constexpr std::uint32_t kAttentionBindings = 6;
inline constexpr std::uint32_t kPackedAttentionBindings = 4;

// Chooses the kernel and its tiles from the device (type, shared memory, workgroup
// invocations) and the shape. Throws vkf::Error when no configuration fits the device.
// `window`: AttentionParams::window (a workgroup then visits at most window + q_len keys, the
// range split-KV splits).
AttentionPlan plan_attention(const AttentionDevice& device, const AttentionShape& shape, AttentionOptions options = {},
                             std::uint32_t window = 0);
// The same for a GPU with these limits.
AttentionPlan plan_attention(const ComputeLimits& limits, const AttentionShape& shape, AttentionOptions options = {},
                             std::uint32_t window = 0);

// The whole plan an Attention for these parameters takes on this device: the kernel and
// tiles (plan_attention) and fp16 arithmetic, which depends on the storage. Throws
// vkf::Error as Attention's constructor does (bad parameters, an unsupported storage, no
// configuration that fits). A decoder plans its steps' attention with it once per step
// shape (DecoderPlan::attention) and hands the plan to the op it records.
AttentionPlan plan_attention_call(const Context& ctx, const AttentionParams& params, DType dtype,
                                  const AttentionOptions& options = {});

// A prepared attention call: validated parameters, the plan, pipelines, and the small
// device buffers it needs (slope table, key lengths, split-KV partials).
class Attention {
public:
    // `dtype`: the storage of Q and O, and of K and V unless options.kv_dtype says otherwise.
    // Supported: all F32, all F16, F32 Q/O with F16 K/V, and F32 Q/O with K and V each F16 or
    // quantized (options.k_quant, v_quant); anything else throws vkf::Error.
    // Plans itself (plan_attention_call).
    Attention(Context& ctx, const AttentionParams& params, DType dtype, AttentionOptions options = {});
    // With the plan plan_attention_call gave for the same parameters, dtype and options.
    Attention(Context& ctx, const AttentionParams& params, DType dtype, AttentionOptions options,
              const AttentionPlan& plan);
    // Records the attention (and the combine pass when split). Q, K, V, O hold the default
    // layout, Q and O in dtype(), K and V in kv_dtype(); their sizes are checked.
    // kv_lens: the key counts ([batch] uint32) with AttentionOptions::external_kv_lens, the
    // sequence table (paged_sequence_table_bytes) with AttentionOptions::paged, else no buffer.
    // Paged: Q and O hold q_rows rows, K and V a whole number of blocks.
    void record(CommandList& list, BufferRange q, BufferRange k, BufferRange v, BufferRange o,
                BufferRange kv_lens = {}) const;
    const AttentionPlan& plan() const { return plan_; }
    DType dtype() const { return dtype_; }
    DType kv_dtype() const { return kv_dtype_; }  // of a side that is not quantized
    QuantFormat k_quant() const { return k_quant_; }
    QuantFormat v_quant() const { return v_quant_; }
    // Bytes of one key row (all KV heads) of K or V as this op reads it (kv_row_bytes).
    std::uint64_t k_row_bytes() const;
    std::uint64_t v_row_bytes() const;
    // Device bytes of the op's own buffers (not counting Q, K, V, O).
    std::uint64_t scratch_bytes() const;

private:
    Context& ctx_;
    AttentionShape shape_;
    DType dtype_;
    DType kv_dtype_;
    QuantFormat k_quant_ = QuantFormat::None;
    QuantFormat v_quant_ = QuantFormat::None;
    AttentionPush push_;
    AttentionPlan plan_;
    bool external_kv_lens_ = false;
    std::optional<PagedKv> paged_;
    const Pipeline* attention_ = nullptr;
    const Pipeline* combine_ = nullptr;
    Buffer slopes_;
    Buffer kv_lens_;
    Buffer partials_;  // split-KV: unnormalized outputs and (max, sum) per split
    // packed_tables: where the slope table starts in partials_ (the key counts, or the
    // sequence table, follow it)
    std::uint64_t tables_offset_ = 0;
};

// Convenience: uploads Q, K, V (float32 host data, converted to `dtype`, K and V to
// options.kv_dtype where set, or quantized as options.k_quant, v_quant say), runs, downloads.
std::vector<float> attention(Context& ctx, const AttentionParams& params, std::span<const float> q,
                             std::span<const float> k, std::span<const float> v, DType dtype = DType::F32,
                             AttentionOptions options = {});

}  // namespace vkf
