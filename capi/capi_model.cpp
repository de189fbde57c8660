// The C API's models (memory estimate, load with progress and cancel, info) and encoders.
#include "capi/capi_internal.hpp"

#include "host/io/gguf.hpp"
#include "host/io/safetensors.hpp"
#include "host/model/memory_estimate.hpp"
#include "host/model/sequence_state.hpp"
#include "host/quant/gguf_tensor_file.hpp"
#include "host/spec/model_tensors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf::capi {
namespace {

constexpr std::size_t kModelParamsV1 = VKF_V1_SIZE(vkf_model_params, cancel);
constexpr std::size_t kEstimateV1 = VKF_V1_SIZE(vkf_memory_estimate, fits);
constexpr std::size_t kModelInfoV1 = VKF_V1_SIZE(vkf_model_info, bos);
constexpr std::size_t kEncoderParamsV1 = VKF_V1_SIZE(vkf_encoder_params, check_finite_weights);

ContextState& context_of(vkf_context* ctx) {
    return *live(ctx, Kind::Context, "vkf_context").state;
}

// A checkpoint directory or a llama.cpp GGUF file (read in place, host/quant/gguf_tensor_file.hpp).
std::filesystem::path model_dir(const char* dir) {
    const std::filesystem::path path = existing_path(dir, "dir");
    std::error_code ignored;
    if (std::filesystem::is_regular_file(path, ignored) && looks_like_gguf(path)) {
        return path;
    }
    if (!std::filesystem::is_directory(path)) {
        throw ApiError(VKF_ERROR_IO, std::string("dir '") + dir + "' is neither a directory nor a GGUF file");
    }
    if (!std::filesystem::exists(path / "config.json")) {
        throw ApiError(VKF_ERROR_IO, std::string("dir '") + dir + "' has no config.json");
    }
    return path;
}

// The sessions a model is loaded for, their KV cache included (estimated exactly).
SessionSize session_size(const vkf_model_params& p) {
    SessionSize size{.max_tokens = p.max_tokens};
    apply_kv_params(p, size);
    return size;
}

// What Model's constructor computes before it uploads anything (host/model/model.cpp).
struct Plan {
    ModelConfig config;
    WeightFormat format;
    ModelMemoryEstimate estimate;
};

Plan plan_model(const ModelConfig& config, const ShardedCheckpoint& checkpoint, const vkf_model_params& p) {
    Plan plan;
    plan.config = resolve_with_checkpoint(config, checkpoint);
    plan.format =
        p.weights == VKF_WEIGHTS_DEFAULT ? default_weight_format(checkpoint, plan.config) : weight_format(p.weights);
    plan.estimate = estimate_model_memory(plan.config, plan.format, session_size(p));
    return plan;
}

Plan plan_model(const std::filesystem::path& dir, const vkf_model_params& p) {
    return plan_model(read_model_config(dir), open_model_checkpoint(dir), p);
}

// vkf_model_load's work once the model's configuration and checkpoint are open.
void load_model(vkf_context* ctx, const vkf_model_params* params, vkf_model** out, ModelConfig config,
                ShardedCheckpoint checkpoint, std::uint32_t tokenizer_crc = 0) {
    vkf_context& context = live(ctx, Kind::Context, "vkf_context");
    out_ptr(out, "out");
    const vkf_model_params p = read_params(params, vkf_model_default_params(), kModelParamsV1, "params");
    if (p.cancel != nullptr) {
        check_handle(p.cancel, Kind::Cancel, "params.cancel");
    }
    // The fit check Model's constructor makes, here first so that a model too big for the
    // device is VKF_ERROR_OUT_OF_MEMORY rather than a plain refusal.
    const Plan plan = plan_model(config, checkpoint, p);
    try {
        vkf::check_model_fits(*context.state->context, plan.estimate, "model '" + checkpoint.source().string() + "'");
    } catch (const vkf::Error& e) {
        throw ApiError(VKF_ERROR_OUT_OF_MEMORY, e.what());
    }
    vkf::ModelOptions options;
    options.weights = plan.format;
    options.check_finite_weights = p.check_finite_weights != 0;
    options.session = session_size(p);
    options.progress = [&p](const vkf::WeightUploadProgress& progress) {
        // Thrown through upload_weights, whose buffers are RAII: nothing is left behind.
        if (p.cancel != nullptr && p.cancel->requested.load()) {
            throw Cancelled{};
        }
        if (p.progress != nullptr && p.progress(progress.bytes_done, progress.total_bytes, p.progress_user_data) != 0) {
            throw Cancelled{};
        }
    };
    if (p.cancel != nullptr && p.cancel->requested.load()) {
        throw Cancelled{};
    }
    auto state = std::make_shared<ModelState>();
    state->context = context.state;
    state->tokenizer_crc = tokenizer_crc;
    state->model = std::make_unique<vkf::Model>(*context.state->context, std::move(config), std::move(checkpoint),
                                                std::move(options));
    auto handle = std::make_unique<vkf_model>();
    handle->state = std::move(state);
    register_handle(handle.get(), Kind::Model);
    *out = handle.release();
}

}  // namespace
}  // namespace vkf::capi

using namespace vkf::capi;

extern "C" {

VKF_API vkf_status vkf_model_estimate_memory(vkf_context* ctx, const char* dir, const vkf_model_params* params,
                                             vkf_memory_estimate* estimate) {
    return guarded(__func__, [&] {
        ContextState& state = context_of(ctx);
        const vkf_model_params p = read_params(params, vkf_model_default_params(), kModelParamsV1, "params");
        out_ptr(estimate, "estimate");
        const Plan plan = plan_model(model_dir(dir), p);
        vkf_memory_estimate e{};
        e.weights = plan.estimate.weights;
        e.kv_cache = plan.estimate.kv_cache;
        e.activations = plan.estimate.activations;
        e.total = plan.estimate.total();
        e.available = state.context->memory_budget().available();
        e.fits = e.total <= e.available;
        write_out(estimate, e, kEstimateV1, "estimate");
    });
}

VKF_API vkf_status vkf_model_load(vkf_context* ctx, const char* dir, const vkf_model_params* params, vkf_model** out) {
    return guarded(__func__, [&] {
        live(ctx, Kind::Context, "vkf_context");
        out_ptr(out, "out");
        const std::filesystem::path path = model_dir(dir);
        load_model(ctx, params, out, vkf::read_model_config(path), vkf::open_model_checkpoint(path),
                   vkf::file_crc32((path / "tokenizer.json").string()));
    });
}

VKF_API vkf_status vkf_model_load_fd(vkf_context* ctx, int fd, uint64_t offset, uint64_t length,
                                     const vkf_model_params* params, vkf_model** out) {
    return guarded(__func__, [&] {
        live(ctx, Kind::Context, "vkf_context");
        out_ptr(out, "out");
        if (fd < 0) {
            throw ApiError(VKF_ERROR_INVALID_ARGUMENT, "fd is negative");
        }
        // A descriptor that cannot be read as that window is an I/O error; a malformed file
        // is VKF_ERROR_MODEL, as from a path.
        vkf::ReadableFile window = [&] {
            try {
                return vkf::ReadableFile(fd, offset, length, "GGUF file");
            } catch (const vkf::Error& e) {
                throw ApiError(VKF_ERROR_IO, e.what());
            }
        }();
        vkf::GgufModelSource model = vkf::open_gguf_model(vkf::open_gguf(std::move(window)));
        load_model(ctx, params, out, std::move(model.config), std::move(model.checkpoint));
    });
}

VKF_API vkf_status vkf_model_free(vkf_model* model) {
    return guarded(__func__, [&] {
        if (model != nullptr) {
            unregister_handle(model, Kind::Model, "vkf_model");
            delete model;
        }
    });
}

VKF_API vkf_status vkf_model_get_info(const vkf_model* model, vkf_model_info* info) {
    return guarded(__func__, [&] {
        const vkf::Model& m = *live(model, Kind::Model, "vkf_model").state->model;
        out_ptr(info, "info");
        const vkf::ModelConfig& c = m.config();
        vkf_model_info i{};
        copy_string(i.family, sizeof i.family, vkf::family_name(c.family));
        i.vocab_size = c.vocab_size;
        i.hidden_size = c.hidden;
        i.n_layer = c.n_layer;
        i.n_head = c.n_head;
        i.n_kv_head = c.n_kv_head;
        i.weights = weight_format_code(m.weight_format());
        i.weight_bytes = m.weights().bytes;
        i.n_eos = static_cast<std::uint32_t>(std::min<std::size_t>(c.eos_token_ids.size(), 8));
        std::copy_n(c.eos_token_ids.begin(), i.n_eos, i.eos);
        i.bos = c.bos_token_id ? static_cast<std::int32_t>(*c.bos_token_id) : -1;
        write_out(info, i, kModelInfoV1, "info");
    });
}

VKF_API vkf_status vkf_encoder_load(vkf_context* ctx, const char* dir, const vkf_encoder_params* params,
                                    vkf_encoder** out) {
    return guarded(__func__, [&] {
        vkf_context& context = live(ctx, Kind::Context, "vkf_context");
        out_ptr(out, "out");
        const vkf_encoder_params p = read_params(params, vkf_encoder_default_params(), kEncoderParamsV1, "params");
        const std::filesystem::path path = model_dir(dir);
        vkf::EncoderOptions options;
        if (p.weights != VKF_WEIGHTS_DEFAULT) {
            options.weights = weight_format(p.weights);
        }
        options.check_finite_weights = p.check_finite_weights != 0;
        auto handle = std::make_unique<vkf_encoder>();
        handle->context = context.state;
        handle->encoder = std::make_unique<vkf::Encoder>(*context.state->context, path, options);
        register_handle(handle.get(), Kind::Encoder);
        *out = handle.release();
    });
}

VKF_API vkf_status vkf_encoder_free(vkf_encoder* encoder) {
    return guarded(__func__, [&] {
        if (encoder != nullptr) {
            unregister_handle(encoder, Kind::Encoder, "vkf_encoder");
            delete encoder;
        }
    });
}

VKF_API vkf_status vkf_encoder_hidden_size(const vkf_encoder* encoder, uint32_t* size) {
    return guarded(__func__, [&] {
        const vkf::Encoder& e = *live(encoder, Kind::Encoder, "vkf_encoder").encoder;
        *out_ptr(size, "size") = e.config().hidden;
    });
}

VKF_API vkf_status vkf_embed(vkf_encoder* encoder, const uint32_t* ids, size_t n_ids, uint32_t pooling, int normalize,
                             float* out, size_t capacity, size_t* n) {
    return guarded(__func__, [&] {
        const InUse in_use(encoder, Kind::Encoder, "vkf_encoder");
        vkf::Encoder& e = *encoder->encoder;
        require(ids != nullptr || n_ids == 0, "ids is NULL");
        out_ptr(n, "n");
        require(pooling <= VKF_POOLING_CLS, "pooling is " + fmt::to_string(pooling) + ", not a vkf_pooling");
        require(out != nullptr || capacity == 0, "out is NULL with a capacity");
        vkf::EncodeOptions options;
        options.pooling = static_cast<vkf::Pooling>(pooling);
        options.normalize = normalize != 0;
        const std::vector<float> values = e.encode(std::span(ids, n_ids), options);
        *n = values.size();
        if (values.size() > capacity) {
            throw ApiError(VKF_ERROR_BUFFER_TOO_SMALL, "the embedding has " + fmt::to_string(values.size()) +
                                                           " floats, capacity is " + fmt::to_string(capacity));
        }
        std::copy(values.begin(), values.end(), out);
    });
}

}  // extern "C"
