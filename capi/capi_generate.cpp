// The C API's sessions and generation.
#include "capi/capi_internal.hpp"

#include "host/grammar/json_schema.hpp"
#include "host/grammar/token_constraint.hpp"
#include "host/io/json.hpp"
#include "host/model/generation.hpp"
#include "host/text/token_pieces.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace vkf::capi {
namespace {

constexpr std::size_t kSessionParamsV1 = VKF_V1_SIZE(vkf_session_params, int8_activations);
constexpr std::size_t kSamplingParamsV1 = VKF_V1_SIZE(vkf_sampling_params, seed);
constexpr std::size_t kGenerateParamsV1 = VKF_V1_SIZE(vkf_generate_params, cancel);
constexpr std::size_t kGenerateResultV1 = VKF_V1_SIZE(vkf_generate_result, decode_seconds);

// Positions are 32-bit signed integers in the attention kernels (shaders/alibi.glsl), and the
// block count of a larger cache would overflow: sessions and batches hold at most this many.
constexpr std::uint32_t kMaxCacheTokens = 0x7fffffffu;

}  // namespace

void check_cache_tokens(std::uint32_t max_tokens, const char* name) {
    require(max_tokens > 0, fmt::format("{} is 0", name));
    require(max_tokens <= kMaxCacheTokens,
            fmt::format("{} is {}, over the limit of {} tokens", name, max_tokens, kMaxCacheTokens));
}

namespace {

// params.grammar or params.json_schema, parsed, over the tokenizer's pieces.
std::shared_ptr<const grammar::Constraint> generation_grammar(const vkf_generate_params& p, const ModelConfig& config) {
    if (p.grammar == nullptr && p.json_schema == nullptr) {
        return nullptr;
    }
    require(p.grammar == nullptr || p.json_schema == nullptr, "params.grammar and params.json_schema: give one");
    require(p.tokenizer != nullptr, "params.tokenizer is NULL: a grammar needs the tokens' bytes");
    const char* field = p.grammar != nullptr ? "params.grammar" : "params.json_schema";
    const std::string_view text = p.grammar != nullptr ? p.grammar : p.json_schema;
    check_utf8(text, field);
    try {
        const std::string gbnf =
            p.grammar != nullptr ? std::string(text) : grammar::json_schema_to_gbnf(parse_json(text, field));
        return std::make_shared<const grammar::Constraint>(
            grammar::Constraint{.grammar = grammar::parse_gbnf(gbnf),
                                .pieces = std::make_shared<const grammar::PieceTrie>(
                                    text::token_pieces(*p.tokenizer->tokenizer, config.vocab_size))});
    } catch (const Error& e) {
        throw ApiError(VKF_ERROR_INVALID_ARGUMENT, fmt::format("{}: {}", field, e.what()));
    }
}

// params.on_logprobs: the generation's logprobs (host/sample/logprobs.hpp) handed on as
// vkf_logprob arrays, built per token (the callback's pointers live during the call only).
void set_logprobs(const vkf_generate_params& p, const ModelConfig& config, GenerationOptions& options) {
    if (p.on_logprobs == nullptr) {
        require(p.n_logprobs == 0, fmt::format("params.n_logprobs is {} with on_logprobs NULL", p.n_logprobs));
        return;
    }
    require(
        p.n_logprobs <= config.vocab_size,
        fmt::format("params.n_logprobs is {}, over the model's vocabulary size {}", p.n_logprobs, config.vocab_size));
    options.logprobs = p.n_logprobs;
    options.on_logprobs = [fn = p.on_logprobs, user_data = p.user_data](std::uint32_t index, const TokenLogprobs& lp) {
        const vkf_logprob chosen{.token = lp.chosen.id, .logprob = lp.chosen.logprob};
        std::vector<vkf_logprob> top;
        top.reserve(lp.top.size());
        for (const TokenLogprob& t : lp.top) {
            top.push_back({.token = t.id, .logprob = t.logprob});
        }
        fn(index, &chosen, top.data(), top.size(), user_data);
    };
}

}  // namespace

GenerateSettings generate_settings(const vkf_generate_params* given, const ModelConfig& config) {
    GenerateSettings s{read_params(given, vkf_generate_default_params(), kGenerateParamsV1, "params"), {}};
    const vkf_generate_params& p = s.params;
    require(p.max_new_tokens > 0, "params.max_new_tokens is 0");
    s.options.n_predict = p.max_new_tokens;
    const vkf_sampling_params sampling =
        read_params(p.sampling, vkf_sampling_default_params(), kSamplingParamsV1, "params.sampling");
    s.options.sampling = {.temperature = sampling.temperature,
                          .top_k = sampling.top_k,
                          .top_p = sampling.top_p,
                          .seed = sampling.seed,
                          .min_p = sampling.min_p,
                          .typical_p = sampling.typical_p,
                          .repetition_penalty = sampling.repetition_penalty,
                          .presence_penalty = sampling.presence_penalty,
                          .frequency_penalty = sampling.frequency_penalty,
                          .penalty_last_n = sampling.penalty_last_n};
    require(sampling.logit_bias != nullptr || sampling.n_logit_bias == 0,
            "params.sampling.logit_bias is NULL with n_logit_bias > 0");
    for (std::size_t i = 0; i < sampling.n_logit_bias; ++i) {
        s.options.sampling.logit_bias.push_back({sampling.logit_bias[i].token, sampling.logit_bias[i].bias});
    }
    try {
        validate(s.options.sampling);
        check_bias_ids(s.options.sampling, config.vocab_size);
    } catch (const Error& e) {
        throw ApiError(VKF_ERROR_INVALID_ARGUMENT, std::string("params.sampling: ") + e.what());
    }
    require(p.stop_ids != nullptr || p.n_stop_ids == 0, "params.stop_ids is NULL with n_stop_ids > 0");
    for (std::size_t i = 0; i < p.n_stop_ids; ++i) {
        // An id the model cannot produce would never stop anything: a caller's mistake.
        require(p.stop_ids[i] < config.vocab_size,
                fmt::format("params.stop_ids[{}] is {}, not below the model's vocabulary size {}", i, p.stop_ids[i],
                            config.vocab_size));
    }
    s.options.stop_ids.assign(p.stop_ids, p.stop_ids + p.n_stop_ids);
    if (p.use_model_eos) {
        s.options.stop_ids.insert(s.options.stop_ids.end(), config.eos_token_ids.begin(), config.eos_token_ids.end());
    }
    if (p.tokenizer != nullptr) {
        check_handle(p.tokenizer, Kind::Tokenizer, "params.tokenizer");
    }
    s.options.grammar = generation_grammar(p, config);
    if (p.cancel != nullptr) {
        check_handle(p.cancel, Kind::Cancel, "params.cancel");
    }
    set_logprobs(p, config, s.options);
    return s;
}

namespace {

text::TokenTextSink::Options sink_options(const vkf_generate_params& params) {
    return {.cancel = params.cancel != nullptr ? &params.cancel->requested : nullptr};
}

}  // namespace

TokenSink::TokenSink(const vkf_generate_params& params)
    : tokenizer_pin_(params.tokenizer, Kind::Tokenizer, "params.tokenizer"),
      cancel_pin_(params.cancel, Kind::Cancel, "params.cancel"),
      on_token_(params.on_token),
      user_data_(params.user_data),
      has_text_(params.tokenizer != nullptr),
      text_(has_text_ ? params.tokenizer->tokenizer.get() : nullptr, sink_options(params)) {}

bool TokenSink::push(std::uint32_t id) {
    const std::string piece = text_.push(id);
    bool go_on = true;
    if (on_token_ != nullptr) {
        go_on = on_token_(id, has_text_ ? piece.c_str() : nullptr, piece.size(), user_data_) == 0;
    }
    // After the callback: a flag set in it, or meanwhile by another thread, stops here.
    return text_.go_on() && go_on;
}

void TokenSink::finish() {
    const std::string rest = text_.finish();
    if (on_token_ != nullptr && !rest.empty()) {
        on_token_(VKF_TOKEN_NONE, rest.c_str(), rest.size(), user_data_);
    }
}

vkf_stop_reason TokenSink::stop_reason(StopReason stop) const {
    switch (stop) {
        case StopReason::Length:
            return VKF_STOP_LENGTH;
        case StopReason::StopToken:
            return VKF_STOP_EOS;
        case StopReason::Caller:
            return text_.cancelled() ? VKF_STOP_CANCELLED : VKF_STOP_CALLBACK;
        case StopReason::CacheFull:
            return VKF_STOP_CACHE_FULL;
        case StopReason::Error:  // a grammar's; vkf_generate throws it instead
            return VKF_STOP_GRAMMAR;
    }
    return VKF_STOP_CALLBACK;
}

}  // namespace vkf::capi

using namespace vkf::capi;

namespace {

vkf_status run_generation(const char* function, vkf_session* session, const uint32_t* prompt, size_t n_prompt,
                          const vkf_generate_params* params, uint32_t* tokens, size_t capacity,
                          vkf_generate_result* result, const char* text, size_t text_length, bool from_text) {
    return guarded(function, [&] {
        const InUse in_use(session, Kind::Session, "vkf_session");
        vkf_session& s = *session;
        const GenerateSettings settings = generate_settings(params, s.model->model->config());
        // Before the tokenizer encodes the prompt: it is pinned from here on.
        TokenSink sink(settings.params);
        std::vector<std::uint32_t> ids;
        if (from_text) {
            require(settings.params.tokenizer != nullptr, "params.tokenizer is NULL: it is needed for a text prompt");
            require(text != nullptr || text_length == 0, "prompt is NULL");
            const std::string_view view = text_length == 0 ? std::string_view() : std::string_view(text, text_length);
            check_utf8(view, "prompt");
            ids = settings.params.tokenizer->tokenizer->encode(view, true);
        } else {
            require(prompt != nullptr || n_prompt == 0, "prompt is NULL");
            ids.assign(prompt, prompt + n_prompt);
        }
        require(tokens != nullptr || capacity == 0, "tokens is NULL with a capacity");
        require(!ids.empty(), "the prompt has no tokens");
        if (result != nullptr) {
            require(result->struct_size >= kGenerateResultV1, "result->struct_size is too small (set it to sizeof)");
        }
        vkf::GenerationOptions options = settings.options;
        options.on_token = [&sink](std::uint32_t, std::uint32_t id) { return sink.push(id); };
        vkf::GenerationResult r;
        try {
            r = vkf::generate(*s.session, ids, options);
        } catch (const vkf::Error& e) {
            // The grammar could not go on (BatchGenerator's messages start so): the caller's.
            if (options.grammar && std::string_view(e.what()).starts_with("grammar:")) {
                throw ApiError(VKF_ERROR_INVALID_ARGUMENT, e.what());
            }
            throw;
        }
        sink.finish();
        std::copy_n(r.tokens.begin(), std::min(capacity, r.tokens.size()), tokens);
        if (result != nullptr) {
            vkf_generate_result out{};
            out.n_prompt_tokens = r.prompt_tokens;
            out.n_tokens = static_cast<std::uint32_t>(r.tokens.size());
            out.stop = sink.stop_reason(r.stop);
            out.prefill_seconds = r.prefill_time.count();
            out.decode_seconds = r.decode_time.count();
            out.n_cached_tokens = r.cached_tokens;
            write_out(result, out, kGenerateResultV1, "result");
        }
    });
}

}  // namespace

extern "C" {

VKF_API vkf_status vkf_session_create(vkf_model* model, const vkf_session_params* params, vkf_session** out) {
    return guarded(__func__, [&] {
        vkf_model& m = live(model, Kind::Model, "vkf_model");
        out_ptr(out, "out");
        const vkf_session_params p = read_params(params, vkf_session_default_params(), kSessionParamsV1, "params");
        check_cache_tokens(p.max_tokens, "params.max_tokens");
        vkf::SessionOptions options;
        options.max_tokens = p.max_tokens;
        if (p.chunk != 0) {
            options.chunk = p.chunk;
        }
        apply_kv_params(p, options);
        options.int8_activations = p.int8_activations != 0;
        options.cache_prefixes = p.prefix_cache != 0;
        auto handle = std::make_unique<vkf_session>();
        handle->model = m.state;
        handle->session = std::make_unique<vkf::Session>(*m.state->model, options);
        register_handle(handle.get(), Kind::Session);
        *out = handle.release();
    });
}

VKF_API vkf_status vkf_session_free(vkf_session* session) {
    return guarded(__func__, [&] {
        if (session != nullptr) {
            unregister_handle(session, Kind::Session, "vkf_session");
            delete session;
        }
    });
}

VKF_API vkf_status vkf_session_reset(vkf_session* session) {
    return guarded(__func__, [&] {
        const InUse in_use(session, Kind::Session, "vkf_session");
        session->session->reset();
    });
}

VKF_API vkf_status vkf_session_position(const vkf_session* session, uint32_t* position) {
    return guarded(__func__, [&] {
        check_not_elsewhere(session, Kind::Session, "vkf_session");
        *out_ptr(position, "position") = session->session->position();
    });
}

VKF_API vkf_status vkf_session_forward(vkf_session* session, const uint32_t* ids, size_t n_ids, float* logits,
                                       size_t capacity, size_t* n) {
    return guarded(__func__, [&] {
        const InUse in_use(session, Kind::Session, "vkf_session");
        vkf_session& s = *session;
        require(ids != nullptr || n_ids == 0, "ids is NULL");
        require(logits != nullptr || capacity == 0, "logits is NULL with a capacity");
        out_ptr(n, "n");
        const std::uint32_t vocab = s.model->model->config().vocab_size;
        *n = vocab;
        if (capacity < vocab) {
            throw ApiError(VKF_ERROR_BUFFER_TOO_SMALL, "the logits are " + fmt::to_string(vocab) +
                                                           " floats, capacity is " + fmt::to_string(capacity));
        }
        const std::vector<float> row = s.session->forward(std::span(ids, n_ids));
        std::copy(row.begin(), row.end(), logits);
    });
}

VKF_API vkf_status vkf_generate(vkf_session* session, const uint32_t* prompt, size_t n_prompt,
                                const vkf_generate_params* params, uint32_t* tokens, size_t capacity,
                                vkf_generate_result* result) {
    return run_generation(__func__, session, prompt, n_prompt, params, tokens, capacity, result, nullptr, 0, false);
}

VKF_API vkf_status vkf_generate_text(vkf_session* session, const char* prompt, size_t length,
                                     const vkf_generate_params* params, vkf_generate_result* result) {
    return run_generation(__func__, session, nullptr, 0, params, nullptr, 0, result, prompt, length, true);
}

}  // extern "C"
