// vkf-run: generates tokens with a BLOOM or MPT checkpoint (Hugging Face config.json +
// safetensors) on a Vulkan device: prefill of the prompt, then decode through the KV
// cache. Prints the generated ids and the prefill and decode throughput; --profile adds
// GPU time per op kind, --check compares every step's logits with the double-precision CPU
// reference model, --json prints one JSON object for scripts.

#include "apps/common/cli.hpp"
#include "host/util/compare.hpp"
#include "host/model/generation.hpp"
#include "host/io/npy.hpp"
#include "host/reference/model.hpp"
#include "host/io/json.hpp"
#include "runtime/device_info_json.hpp"
#include "runtime/error.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <memory>
#include <unistd.h>
#include <vector>

namespace {

using vkf::cli::kExitFailure;
using vkf::cli::kExitUsage;
using vkf::cli::UsageError;
constexpr int kExitCheckFailed = 3;

constexpr const char* kUsage =
    R"(usage: vkf-run --model DIR (--prompt-ids 1,2,3 | --prompt-ids-file F) [options]

Runs a BLOOM or MPT checkpoint (DIR/config.json + model.safetensors or a sharded
checkpoint) on the best Vulkan device: the prompt in one forward pass (prefill), then one
token per step through the KV cache (decode). Prints the generated token ids, then the
prefill and decode throughput.

options:
  --model DIR            the checkpoint directory
  --prompt-ids LIST      prompt token ids, separated by commas
  --prompt-ids-file F    prompt token ids in a file, separated by commas or whitespace
  --n-predict N          tokens to generate (default 32)
  --temp T               sampling temperature (default 0: greedy)
  --top-k K              sample among the K most likely tokens (default 0: all)
  --top-p P              sample from the smallest set whose probability reaches P (default 1)
  --seed S               sampling seed (default 0)
  --weights f32|f16      weight storage on the device (default: f16 for an all-F16
                         checkpoint, else f32)
  --chunk N              most prompt tokens per submission (default 128)
  --device D             device index or name substring (default: VKF_DEVICE, else the best)
  --limits SPEC          lower the device limits, e.g. phone (see VKF_LIMITS)
  --profile              time every dispatch and print GPU time per op kind
  --check                run the double-precision CPU reference model on the same tokens
                         and print the largest relative logit error over all steps; exit
                         with status 3 when it is above --check-tolerance
  --check-tolerance E    (default 1e-3)
  --logits-out F.npy     write the float32 logits of every generated step [n_predict, vocab]
  --json                 print one JSON object instead of text
  --quiet                no progress output on stderr
  -h, --help             show this help
)";

struct Options {
    std::string model;
    std::vector<std::uint32_t> prompt;
    std::uint32_t n_predict = 32;
    vkf::SamplingParams sampling;
    std::optional<vkf::DType> weights;
    std::uint32_t chunk = 128;
    std::optional<std::string> device;
    vkf::LimitOverrides limits;
    bool profile = false;
    bool check = false;
    double check_tolerance = 1e-3;
    std::string logits_out;
    bool json = false;
    bool quiet = false;
    bool help = false;
};

std::vector<std::uint32_t> parse_ids(std::string_view source, std::string_view text) {
    std::vector<std::uint32_t> ids;
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t start = text.find_first_not_of(", \t\r\n", i);
        if (start == std::string_view::npos) {
            break;
        }
        const std::size_t end = std::min(text.find_first_of(", \t\r\n", start), text.size());
        ids.push_back(vkf::cli::parse_integer<std::uint32_t>(source, text.substr(start, end - start), 0));
        i = end;
    }
    if (ids.empty()) {
        throw UsageError{std::string(source) + ": no token ids given"};
    }
    return ids;
}

Options parse_options(int argc, char** argv) {
    Options o;
    bool have_prompt = false;
    vkf::cli::ArgReader a(argc, argv);
    while (a.next()) {
        const std::string_view arg = a.name();
        if (arg == "-h" || arg == "--help") {
            a.flag();
            o.help = true;
        } else if (arg == "--model") {
            o.model = a.value();
        } else if (arg == "--prompt-ids" || arg == "--prompt-ids-file") {
            if (have_prompt) {
                throw UsageError{"give the prompt once, with --prompt-ids or --prompt-ids-file"};
            }
            have_prompt = true;
            const std::string value = a.value();
            if (arg == "--prompt-ids") {
                o.prompt = parse_ids(arg, value);
            } else {
                std::ifstream in{value};
                if (!in) {
                    throw UsageError{"--prompt-ids-file: cannot open '" + value + "'"};
                }
                std::stringstream text;
                text << in.rdbuf();
                o.prompt = parse_ids(value, text.str());
            }
        } else if (arg == "--n-predict") {
            o.n_predict = vkf::cli::parse_count(arg, a.value(), 1);
        } else if (arg == "--temp") {
            o.sampling.temperature = static_cast<float>(vkf::cli::parse_number(arg, a.value()));
        } else if (arg == "--top-k") {
            o.sampling.top_k = vkf::cli::parse_count(arg, a.value(), 0);
        } else if (arg == "--top-p") {
            o.sampling.top_p = static_cast<float>(vkf::cli::parse_number(arg, a.value()));
        } else if (arg == "--seed") {
            o.sampling.seed = vkf::cli::parse_integer<std::uint64_t>(arg, a.value(), 0);
        } else if (arg == "--weights") {
            o.weights = vkf::cli::parse_choice(arg, a.value(), {"f32", "f16"}) == "f16" ? vkf::DType::F16
                                                                                      : vkf::DType::F32;
        } else if (arg == "--chunk") {
            o.chunk = vkf::cli::parse_count(arg, a.value(), 1);
        } else if (arg == "--device") {
            o.device = a.value();
        } else if (arg == "--limits") {
            o.limits = vkf::cli::parse_limits(arg, a.value(), o.limits);
        } else if (arg == "--profile") {
            a.flag();
            o.profile = true;
        } else if (arg == "--check") {
            a.flag();
            o.check = true;
        } else if (arg == "--check-tolerance") {
            o.check_tolerance = vkf::cli::parse_positive(arg, a.value());
        } else if (arg == "--logits-out") {
            o.logits_out = a.value();
        } else if (arg == "--json") {
            a.flag();
            o.json = true;
        } else if (arg == "--quiet") {
            a.flag();
            o.quiet = true;
        } else {
            a.unknown();
        }
    }
    if (o.help) {
        return o;
    }
    if (o.model.empty()) {
        throw UsageError{"--model DIR is required"};
    }
    if (!have_prompt) {
        throw UsageError{"give the prompt with --prompt-ids or --prompt-ids-file"};
    }
    try {
        vkf::validate(o.sampling);
    } catch (const vkf::Error& e) {
        throw UsageError{e.what()};
    }
    return o;
}

// Progress on stderr: a line redrawn in place on a terminal, occasional plain lines in a log.
class ProgressLine {
public:
    explicit ProgressLine(bool enabled) : enabled_(enabled), tty_(::isatty(2) != 0) {}
    // `fraction` of the work done; `text` describes it. Logs get a line per quarter.
    void update(double fraction, const std::string& text) {
        if (!enabled_) {
            return;
        }
        const bool done = fraction >= 1.0;
        if (tty_) {
            std::fprintf(stderr, "\r%s%s", text.c_str(), done ? "\n" : "");
            return;
        }
        const int quarter = static_cast<int>(fraction * 4.0);
        if (quarter > last_quarter_) {
            last_quarter_ = quarter;
            std::fprintf(stderr, "%s\n", text.c_str());
        }
    }

private:
    bool enabled_;
    bool tty_;
    int last_quarter_ = -1;
};

std::string gigabytes(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GB", static_cast<double>(bytes) / 1e9);
    return text;
}

struct CheckResult {
    double max_rel = 0.0; // the largest per-step max |gpu - ref| / max |ref|
    std::uint32_t worst_step = 0;
    double seconds = 0.0;
};

// The reference runs once over prompt + generated[0 .. n-2]: the row of position
// prompt - 1 + s holds the logits step s was sampled from.
CheckResult check_logits(const vkf::Model& model, std::span<const std::uint32_t> prompt,
                         const vkf::GenerationResult& result, bool quiet) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::uint32_t> ids(prompt.begin(), prompt.end());
    ids.insert(ids.end(), result.tokens.begin(), result.tokens.end() - 1);
    vkf::reference::ModelOptions options{.round_weights_to_f16 = model.weight_dtype() == vkf::DType::F16};
    auto line = std::make_shared<ProgressLine>(!quiet);
    options.progress = [line](std::uint32_t layer, std::uint32_t n_layer) {
        line->update(static_cast<double>(layer + 1) / n_layer,
                     "check: CPU reference model, layer " + std::to_string(layer + 1) + " of " +
                         std::to_string(n_layer));
    };
    const vkf::reference::Model reference(model.config(), model.checkpoint(), options);
    const std::vector<double> ref = reference.forward(ids);
    const std::size_t vocab = model.config().vocab_size;
    CheckResult check;
    for (std::uint32_t s = 0; s < result.tokens.size(); ++s) {
        const std::size_t row = prompt.size() - 1 + s;
        const vkf::ErrorStats e = vkf::compare_to_reference(std::span(result.logits).subspan(s * vocab, vocab),
                                                            std::span(ref).subspan(row * vocab, vocab));
        if (!(e.max_rel <= check.max_rel)) {
            check.max_rel = e.max_rel;
            check.worst_step = s;
        }
    }
    check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return check;
}

int run(const Options& o) {
    const vkf::ContextOptions context_options{.device = o.device, .limits = o.limits};
    vkf::Context ctx(context_options);
    const bool progress = !o.quiet;

    const auto load_start = std::chrono::steady_clock::now();
    vkf::ModelOptions model_options{.weight_dtype = o.weights};
    auto load_line = std::make_shared<ProgressLine>(progress);
    model_options.progress = [load_line, last = -1](const vkf::WeightUploadProgress& p) mutable {
        const int percent = p.total_bytes ? static_cast<int>(100 * p.bytes_done / p.total_bytes) : 100;
        if (percent != last) {
            last = percent;
            load_line->update(percent / 100.0,
                              "loading weights: " + std::to_string(percent) + "% of " + gigabytes(p.total_bytes));
        }
    };
    const vkf::Model model(ctx, o.model, model_options);
    const double load_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    const vkf::ModelConfig& config = model.config();

    vkf::Session session(model, vkf::SessionOptions{
                                    .max_tokens = static_cast<std::uint32_t>(o.prompt.size() + o.n_predict - 1),
                                    .chunk = o.chunk,
                                    .profiling = o.profile});
    if (progress) {
        std::fprintf(stderr, "%s: %u layers, hidden %u, %u heads, vocab %u, %s weights (%s), on %s\n",
                     std::string(vkf::family_name(config.family)).c_str(), config.n_layer, config.hidden,
                     config.n_head, config.vocab_size, vkf::to_string(model.weight_dtype()),
                     gigabytes(model.weights().bytes).c_str(), ctx.device_info().name.c_str());
    }
    vkf::GenerationOptions gen{.n_predict = o.n_predict,
                               .sampling = o.sampling,
                               .keep_logits = o.check || !o.logits_out.empty()};
    auto gen_line = std::make_shared<ProgressLine>(progress);
    gen.on_token = [gen_line, n = o.n_predict](std::uint32_t i, std::uint32_t) {
        gen_line->update(static_cast<double>(i + 1) / n,
                         "generating: " + std::to_string(i + 1) + " of " + std::to_string(n) + " tokens");
    };
    const vkf::GenerationResult result = vkf::generate(session, o.prompt, gen);

    if (!o.logits_out.empty()) {
        const std::size_t shape[] = {result.tokens.size(), config.vocab_size};
        vkf::write_npy_f32(o.logits_out, shape, result.logits);
    }
    std::optional<CheckResult> check;
    if (o.check) {
        check = check_logits(model, o.prompt, result, o.quiet);
    }
    double profile_total = 0.0;
    for (const auto& [kind, p] : session.profile()) {
        profile_total += p.ms;
    }

    if (o.json) {
        nlohmann::ordered_json json = {
            {"device", ctx.device_info()},
            {"model",
             {{"path", o.model},
              {"family", vkf::family_name(config.family)},
              {"n_layer", config.n_layer},
              {"hidden", config.hidden},
              {"n_head", config.n_head},
              {"vocab_size", config.vocab_size},
              {"weight_dtype", vkf::to_string(model.weight_dtype())},
              {"weight_bytes", model.weights().bytes},
              {"load_seconds", load_seconds}}},
            {"sampling",
             {{"temperature", double{o.sampling.temperature}},
              {"top_k", o.sampling.top_k},
              {"top_p", double{o.sampling.top_p}},
              {"seed", o.sampling.seed}}},
            {"prompt_ids", o.prompt},
            {"generated_ids", result.tokens},
            {"prefill_seconds", result.prefill_time.count()},
            {"decode_seconds", result.decode_time.count()},
            {"prefill_tokens_per_second", result.prefill_tokens_per_second()},
            {"decode_tokens_per_second", result.decode_tokens_per_second()},
            {"submissions", session.submissions()},
            {"session_device_bytes", session.device_bytes()},
        };
        if (check) {
            json["check"] = {{"max_rel_logit_error", check->max_rel},
                             {"worst_step", check->worst_step},
                             {"reference_seconds", check->seconds}};
        }
        if (o.profile) {
            json["profile"] = nlohmann::ordered_json::object();
            for (const auto& [kind, p] : session.profile()) {
                json["profile"][kind] = {{"gpu_ms", p.ms}, {"dispatches", p.dispatches}};
            }
        }
        std::cout << vkf::json_text(json);
        std::cout << "\n";
        return check && !(check->max_rel <= o.check_tolerance) ? kExitCheckFailed : 0;
    }

    std::printf("generated:");
    for (const std::uint32_t id : result.tokens) {
        std::printf(" %u", id);
    }
    std::printf("\n");
    std::printf("prefill: %zu tokens in %.3f s, %.2f tokens/s\n", o.prompt.size(), result.prefill_time.count(),
                result.prefill_tokens_per_second());
    std::printf("decode:  %zu tokens in %.3f s, %.2f tokens/s\n", result.tokens.size() - 1,
                result.decode_time.count(), result.decode_tokens_per_second());
    if (o.profile) {
        std::printf("GPU time by op kind over %llu submissions (%.1f ms in all):\n",
                    static_cast<unsigned long long>(session.submissions()), profile_total);
        std::vector<std::pair<std::string, vkf::OpProfile>> kinds(session.profile().begin(), session.profile().end());
        std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
        for (const auto& [kind, p] : kinds) {
            std::printf("  %-22s %10.1f ms %5.1f%% %8llu dispatches\n", kind.c_str(), p.ms,
                        profile_total > 0 ? 100.0 * p.ms / profile_total : 0.0,
                        static_cast<unsigned long long>(p.dispatches));
        }
    }
    if (check) {
        std::printf("check: largest relative logit error %.3g (step %u of %zu; max |gpu - ref| / max |ref| per "
                    "step, CPU reference in %.1f s)\n",
                    check->max_rel, check->worst_step, result.tokens.size(), check->seconds);
        if (!(check->max_rel <= o.check_tolerance)) {
            std::printf("check: FAILED, above the tolerance %g\n", o.check_tolerance);
            return kExitCheckFailed;
        }
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    Options options;
    try {
        options = parse_options(argc, argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "vkf-run: %s (see --help)\n", e.message.c_str());
        return kExitUsage;
    }
    if (options.help) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    try {
        return run(options);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkf-run: error: %s\n", e.what());
        return kExitFailure;
    }
}
