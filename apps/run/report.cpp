#include "apps/run/report.hpp"

#include "apps/common/stop_signals.hpp"

#include "host/spec/model_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace vkf::run_cli {

void stream_prompt_text(const Options& o, const text::Tokenizer& tokenizer, std::optional<app::StreamedText>& streamed,
                        GenerationOptions& gen) {
    streamed.emplace(tokenizer, o.stops, o.json ? nullptr : stdout);
    if (!o.json) {
        fmt::print("{}", *o.prompt_text);
        std::fflush(stdout);
    }
    gen.on_token = [&streamed](std::uint32_t, std::uint32_t id) {
        return streamed->push(id) && app::stop_signal() == 0;  // Ctrl-C: stop, keep the output
    };
}

std::string_view stop_reason_name(StopReason reason) {
    switch (reason) {
        case StopReason::Length:
            return "length";
        case StopReason::StopToken:
            return "eos";
        case StopReason::Caller:
            return "stop string";
        case StopReason::CacheFull:
            return "length";  // OpenAI's finish_reason: a length limit, here the cache's
        case StopReason::Error:
            return "error";
    }
    return "unknown";
}

std::string_view stop_reason_text(StopReason reason) {
    switch (reason) {
        case StopReason::Length:
            return "--n-predict";
        case StopReason::StopToken:
            return "end-of-sequence token";
        case StopReason::Caller:
            return "stop string";
        case StopReason::CacheFull:
            return "KV cache full";
        case StopReason::Error:
            return "error";
    }
    return "unknown";
}

nlohmann::ordered_json model_json(const Options& o, const Model& model, double load_seconds) {
    const ModelConfig& config = model.config();
    return {{"path", o.model},
            {"family", family_name(config.family)},
            {"n_layer", config.n_layer},
            {"hidden", config.hidden},
            {"n_head", config.n_head},
            {"vocab_size", config.vocab_size},
            {"weights", to_string(model.weight_format())},
            {"weight_bytes", model.weights().bytes},
            {"load_seconds", load_seconds}};
}

std::string prepare_line(const PreparationStats& s) {
    const std::string hits = s.created == 0    ? ""
                             : s.hits_reported ? fmt::format(", {} from the pipeline cache", s.cache_hits)
                                               : ", the driver does not report pipeline-cache hits";
    return fmt::format("prepare: {} pipelines in {:.3f} s ({} made on {} threads{}; {} existed)", s.pipelines,
                       s.seconds, s.created, s.threads, hits, s.pipelines - s.created);
}

nlohmann::ordered_json prepare_json(const PreparationStats& s) {
    return {{"pipelines", s.pipelines},         {"created", s.created}, {"cache_hits", s.cache_hits},
            {"hits_reported", s.hits_reported}, {"threads", s.threads}, {"create_seconds", s.create_seconds},
            {"warm_seconds", s.warm_seconds},   {"seconds", s.seconds}};
}

nlohmann::ordered_json sampling_json(const SamplingParams& sampling) {
    nlohmann::ordered_json bias = nlohmann::ordered_json::object();
    for (const LogitBias& b : sampling.logit_bias) {
        bias[fmt::format("{}", b.id)] = double{b.bias};
    }
    return {{"temperature", double{sampling.temperature}},
            {"top_k", sampling.top_k},
            {"top_p", double{sampling.top_p}},
            {"seed", sampling.seed},
            {"min_p", double{sampling.min_p}},
            {"typical_p", double{sampling.typical_p}},
            {"repetition_penalty", double{sampling.repetition_penalty}},
            {"presence_penalty", double{sampling.presence_penalty}},
            {"frequency_penalty", double{sampling.frequency_penalty}},
            {"penalty_last_n", sampling.penalty_last_n},
            {"logit_bias", bias}};
}

void add_memory_json(nlohmann::ordered_json& json, const Context& ctx) {
    const MemoryStats memory = ctx.memory_stats();
    json["host_visible_fallback_bytes"] = memory.fallback_buffer_bytes;
    json["memory_note"] = memory.note.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(memory.note);
}

nlohmann::ordered_json check_json(const CheckResult& check) {
    nlohmann::ordered_json json = {
        {"max_rel_logit_error", check.max_rel}, {"worst_step", check.worst_step}, {"reference_seconds", check.seconds}};
    if (check.original_max_rel) {
        json["max_rel_logit_error_vs_original_weights"] = *check.original_max_rel;
    }
    return json;
}

nlohmann::ordered_json profile_json(const Profile& profile) {
    nlohmann::ordered_json json = nlohmann::ordered_json::object();
    for (const auto& [kind, p] : profile) {
        json[kind] = {{"gpu_ms", p.ms}, {"dispatches", p.dispatches}};
    }
    return json;
}

std::string profile_text(const Profile& profile, std::uint64_t submissions) {
    double total = 0.0;
    for (const auto& [kind, p] : profile) {
        total += p.ms;
    }
    std::string text = fmt::format("GPU time by op kind over {} submissions ({:.1f} ms in all):\n", submissions, total);
    std::vector<std::pair<std::string, OpProfile>> kinds(profile.begin(), profile.end());
    std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    for (const auto& [kind, p] : kinds) {
        text += fmt::format("  {:<22} {:>10.1f} ms {:>5.1f}% {:>8} dispatches\n", kind, p.ms,
                            total > 0 ? 100.0 * p.ms / total : 0.0, p.dispatches);
    }
    return text;
}

void print_profile(const Profile& profile, std::uint64_t submissions) {
    fmt::print("{}", profile_text(profile, submissions));
}

bool print_check(const CheckResult& check, std::size_t steps, const Model& model, double tolerance) {
    fmt::print(
        "check: largest relative logit error {:.3g} (step {} of {}; max |gpu - ref| / max |ref| per "
        "step, CPU reference in {:.1f} s)\n",
        check.max_rel, check.worst_step, steps, check.seconds);
    if (check.original_max_rel) {
        fmt::print(
            "check: largest relative logit error {:.3g} against the original (unquantized) weights: the "
            "{} format's own error\n",
            *check.original_max_rel, to_string(model.weight_format()));
    }
    if (!(check.max_rel <= tolerance)) {
        fmt::print("check: FAILED, above the tolerance {}\n", tolerance);
        return false;
    }
    return true;
}

}  // namespace vkf::run_cli
