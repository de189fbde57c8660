#pragma once
// An ALiBi decoder (BLOOM, MPT, Falcon-RW, Baichuan, Jais) on the device (Model: configuration and weights) and one
// sequence running through it (Session: the KV cache and activations). Every token chunk's forward pass, all layers and
// the logits, is one command list submitted once. A Session records the list of a chunk size once, with its ops planned
// and its descriptor sets written, and submits it again for every later chunk of that size (every decoding step is the
// same one-token list): what changes from step to step, the key count, sits in a small host-visible buffer the kernels
// read (QkvScatter, AttentionOptions::external_kv_lens).
//
// Block structure (each family's Hugging Face modeling code, inference; host/reference/
// model.hpp spells out every family):
//   h = embed(ids) (+ MPT's learned positions) (* Jais' embedding scale) (BLOOM: then LN)
//   per layer: h += out(attn(qkv(norm1(h)))); h += down(mlp(norm2(h)))
//   logits = head(norm_f(h)) (* MPT's or Jais' logit scale, * Baichuan2's 1 / |head row|)
// where norm is a LayerNorm or (Baichuan) an RMSNorm, mlp is act(up(x)) or the gated
// act(gate(x)) * up(x) (Baichuan, Jais), and BLOOM's post-LN variant adds norm1(h) and
// norm2(h) as the residuals. Attention is causal with ALiBi (the family's slopes as a slope
// table; Falcon's bias bf16-rounded and added before the scale; Jais' alibi_scaling), or
// without it (MPT alibi false). The fused QKV output is [n_head, 3, head_dim] per token
// (BLOOM, Falcon) or [q | k | v] with n_kv_head key and value heads; the KV-append kernel
// reads either layout straight into the cache.
//
// Activations are fp32, the KV cache fp16 (or fp32, SessionOptions::kv_dtype); weights fp32,
// fp16, or q8_0/q4_0 matrices with fp16 norms and biases (ModelWeights).

#include "host/model/memory_estimate.hpp"
#include "host/model/weights.hpp"
#include "host/ops/attention.hpp"
#include "host/ops/matmul.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vkf {

struct ModelOptions {
    // Default: default_weight_format(). An ordinary checkpoint loads in any format (its
    // matrices quantized at load time for q8_0/q4_0); a quantized one only in its own.
    std::optional<WeightFormat> weights = std::nullopt;
    std::function<void(const WeightUploadProgress&)> progress = {};
    // Refuse, naming the tensor and the element, a checkpoint holding a NaN or infinite weight
    // (costs one look at every value as it is uploaded).
    bool check_finite_weights = true;
    // The session the model is loaded for: before uploading anything, the constructor refuses
    // (vkf::Error naming the numbers) a model whose weights plus this session's KV cache and
    // activations do not fit the device's memory budget (memory_estimate.hpp). Default: the
    // weights alone.
    SessionSize session = {};
};

class Model {
public:
    // Reads DIR/config.json and the safetensors checkpoint in DIR (single or sharded),
    // checks them against each other and uploads the weights.
    Model(Context& ctx, const std::filesystem::path& dir, ModelOptions options = {});
    // A model of this shape with synthetic_weights(): for benchmarks, no checkpoint.
    Model(Context& ctx, const ModelConfig& config, WeightFormat format);
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    Context& context() const { return ctx_; }
    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    // The checkpoint the weights came from; throws vkf::Error for synthetic weights.
    const ShardedCheckpoint& checkpoint() const;
    WeightFormat weight_format() const { return weights_.format; }
    // The ALiBi slope of every head, as the attention kernel receives them.
    const std::vector<float>& alibi_slopes() const { return slopes_; }

private:
    Context& ctx_;
    ModelConfig config_;
    std::unique_ptr<ShardedCheckpoint> checkpoint_;
    ModelWeights weights_;
    std::vector<float> slopes_;
};

// GPU time per op kind (the dispatch labels: "matmul", "attention", "layernorm", ...),
// summed over the submissions made with profiling on.
struct OpProfile {
    double ms = 0.0;
    std::uint64_t dispatches = 0;
};
using Profile = std::map<std::string, OpProfile>;

struct SessionOptions {
    std::uint32_t max_tokens = 0;  // KV-cache capacity: prompt plus generated tokens
    // Most tokens run through the layers per submission: bounds one submission's time (a
    // 128-token chunk of BLOOM-560m takes about two minutes on lavapipe).
    std::uint32_t chunk = 128;
    // GPUs: milliseconds one prompt submission should take at most, well under the watchdogs
    // that reset a GPU whose work runs for about 2 s (Windows' TDR, Android's drivers). The
    // first prompt chunk is at most 16 tokens; later ones take as many tokens (up to
    // `chunk`, a power of two) as the measured GPU time per token of the last one allows.
    // 0, and CPU devices (no watchdog): always `chunk` tokens.
    std::uint32_t submission_target_ms = 500;
    bool profiling = false;  // time every dispatch (GPU timestamps) into profile()
    // The QKV projection writes Q, K and V where attention reads them (QkvScatter), and
    // recorded lists are re-submitted. Off, or on devices with too few storage buffers per
    // shader stage for the fused kernel: Q and K/V are repacked by separate passes, and each
    // chunk is recorded anew (the append position is a push constant).
    bool fuse_qkv = true;
    // LayerNorms run inside the row-dot matmuls that read them (matmul_fuses_layernorm:
    // decoding on CPU devices) where the rows are short enough for that to pay (hidden <=
    // 128, docs/DESIGN.md "Decoding steps"), instead of as dispatches of their own.
    bool fuse_layernorm = true;
    // Re-submit recorded steps (fused only); false records every chunk anew, as a check.
    bool reuse_steps = true;
    // KV-cache storage, F16 or F32. F16 halves the cache's memory and the attention's reads
    // of it, which dominate decoding over a long context; Q and the attention output stay
    // fp32 and all attention arithmetic is fp32. Every device can hold it: fp16 tensors are
    // read as packed pairs with unpackHalf2x16 (core GLSL), no 16-bit storage feature.
    DType kv_dtype = DType::F16;
    // Quantized weights: X rounded to int8 per block for the matmuls' integer dot-product
    // path (MatmulOptions::int8_activations) where the device has it. Changes the numerics.
    bool int8_activations = false;
};

// Prompt tokens the next submission may take (SessionOptions::submission_target_ms) after
// one of `tokens` tokens took `gpu_ms`: what fits target_ms at that rate, a power of two,
// 1 .. max_chunk.
std::uint32_t prompt_chunk_after(double gpu_ms, std::uint32_t tokens, std::uint32_t target_ms, std::uint32_t max_chunk);

// What the submissions of a Session did (Session::stats()).
struct SessionStats {
    std::uint64_t submissions = 0;
    std::uint64_t recordings = 0;  // command lists recorded (the rest were re-submitted)
    std::uint64_t dispatches = 0;  // over all submissions
    std::uint64_t barriers = 0;    // hazard barriers, over all submissions
    std::uint64_t tokens = 0;      // run through the layers
    double gpu_ms = 0.0;           // GPU time of the submissions (timestamps), 0 without
    double wall_ms = 0.0;          // host wall time of forward(), submission waits included
};

class Session {
public:
    Session(const Model& model, SessionOptions options);
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Runs `ids` (appended to the sequence at position() onwards) through the model,
    // storing their keys and values in the cache, and returns the fp32 logits of the last
    // one ([vocab]), of every one ([ids.size(), vocab]), or none (the final norm and the
    // head are skipped: benchmarks of the layers alone). Throws vkf::Error for an empty
    // input, ids >= vocab_size, or a sequence over max_tokens.
    enum class Logits { Last, All, None };
    std::vector<float> forward(std::span<const std::uint32_t> ids, Logits logits = Logits::Last);

    std::uint32_t position() const { return position_; }
    std::uint32_t max_tokens() const { return options_.max_tokens; }
    DType kv_dtype() const { return options_.kv_dtype; }
    void reset() {
        position_ = 0;
        chunk_ends_.clear();
    }
    // The key count after each submission since the last reset(): where the chunks the
    // tokens ran in ended (a reference run in the same chunks, reference::Model::forward,
    // gives the same numerics even under Jais' length-dependent ALiBi scaling).
    const std::vector<std::uint32_t>& chunk_ends() const { return chunk_ends_; }
    const Profile& profile() const { return profile_; }
    std::uint64_t submissions() const { return stats_.submissions; }
    const SessionStats& stats() const { return stats_; }
    // Whether this session's steps fuse QKV and are re-submitted (SessionOptions::fuse_qkv
    // and the device's limits).
    bool fused_qkv() const { return fused_; }
    // Device bytes of the KV cache and the activations.
    std::uint64_t device_bytes() const;

private:
    // One recorded forward pass of `tokens` tokens: its attention op and its command list.
    struct Step {
        std::unique_ptr<Attention> attention;
        std::unique_ptr<CommandList> list;
    };
    void run_chunk(std::span<const std::uint32_t> ids, bool all_logits, std::span<float> logits_out);
    std::unique_ptr<Step> record_step(std::uint32_t tokens, std::uint32_t logit_rows);
    void record_layer(CommandList& list, std::uint32_t layer, std::uint32_t tokens, const Attention& attention);
    // The family's norm (LayerNorm or RMSNorm) over `rows` rows of `dim` elements (0: hidden),
    // `stride` apart (0: dense).
    void record_norm(CommandList& list, const NormWeights& norm, BufferRange x, BufferRange y, std::uint32_t rows,
                     std::uint32_t dim = 0, std::uint32_t stride = 0) const;
    XLayerNorm x_norm(const NormWeights& norm) const;
    // Whether the LayerNorm before an [m, n, k] matmul binding `bindings` buffers runs inside it.
    bool fuses_layernorm(std::uint32_t m, std::uint32_t n, std::uint32_t k, std::uint32_t bindings) const;
    // Grows the matmul scratch and the logits for a chunk; recorded steps, which bound the old
    // buffers, are dropped first.
    void ensure_scratch(std::uint32_t tokens, std::uint32_t logit_rows);

    const Model& model_;
    Context& ctx_;
    SessionOptions options_;
    std::uint32_t position_ = 0;
    std::vector<std::uint32_t> chunk_ends_;
    std::vector<Buffer> k_cache_, v_cache_;  // per layer [max_tokens, n_kv_head, head_dim] kv_dtype
    Buffer ids_;                             // [chunk] uint32, host-visible
    Buffer positions_;                       // [chunk] uint32, host-visible: MPT's learned positions
    Buffer hidden_, normed_, qkv_, q_, attn_, mlp_;
    Buffer gate_;  // gated MLPs: the gate's output, then the gated product
    Buffer logits_;
    Buffer scratch_;
    Buffer step_;  // host-visible uint32: the key count after the chunk being run
    // GPUs with a submission target: prompt chunks follow the measured time per token.
    bool adaptive_chunks_ = false;
    std::uint32_t chunk_limit_ = 0;  // prompt tokens per submission now (submission_target_ms)
    bool fused_ = true;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::unique_ptr<Step>> steps_;  // by (tokens, logit rows)
    Profile profile_;
    SessionStats stats_;
};

}  // namespace vkf
