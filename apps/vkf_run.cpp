// vkf-run: generates text or tokens with a decoder checkpoint (BLOOM, MPT, Falcon-RW,
// Baichuan, Jais; Hugging Face config.json + safetensors, tokenizer.json for text) on a Vulkan device: prefill of the
// prompt, then decode through the KV cache. Streams the generated text (--prompt) or prints
// the generated ids (--prompt-ids), then the prefill and decode throughput; --profile adds
// GPU time per op kind, --check compares every step's logits with the double-precision CPU
// reference model, --json prints one JSON object for scripts, --interactive keeps one
// session (and its KV cache) over the turns of a conversation read from stdin.

#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/options.hpp"
#include "apps/common/progress_line.hpp"
#include "apps/common/streamed_text.hpp"
#include "host/io/json.hpp"
#include "host/io/npy.hpp"
#include "host/io/text_file.hpp"
#include "host/model/generation.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/reference/model.hpp"
#include "host/spec/model_config.hpp"
#include "host/util/compare.hpp"
#include "host/util/format.hpp"
#include "runtime/device_info_json.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace {

constexpr const char* kAbout =
    "Runs a decoder checkpoint (BLOOM, MPT, Falcon-RW, Baichuan, Jais; DIR/config.json +\n"
    "model.safetensors or a sharded checkpoint) on the best Vulkan device: the prompt in one forward pass (prefill), "
    "then one\n"
    "token per step through the KV cache (decode). With --prompt, the text is tokenized with\n"
    "DIR/tokenizer.json (or --tokenizer) and the generated text is printed as it is made;\n"
    "with --prompt-ids, the generated token ids. Then the prefill and decode throughput.\n"
    "Generation stops after --n-predict tokens, at the model's end-of-sequence token\n"
    "(config.json eos_token_id) or at a --stop string.\n";

constexpr const char* kFooter = "exit status: 0 ok, 1 failure, 2 bad command line, 3 --check above the tolerance";

struct Options {
    std::string model;
    std::vector<std::uint32_t> prompt;
    std::optional<std::string> prompt_text;
    std::string tokenizer;
    std::vector<std::string> stops;
    bool ignore_eos = false;
    bool interactive = false;
    std::uint32_t ctx = 2048;
    std::uint32_t n_predict = 32;
    vkf::SamplingParams sampling;
    std::optional<vkf::WeightFormat> weights;
    vkf::DType kv = vkf::SessionOptions{}.kv_dtype;
    std::uint32_t chunk = 128;
    vkf::app::DeviceOptions device;
    bool profile = false;
    bool int8_activations = false;
    bool unfused = false;
    bool skip_weight_check = false;
    bool check = false;
    double check_tolerance = 1e-3;
    std::string logits_out;
    bool json = false;
    bool quiet = false;
};

// Token ids separated by commas or whitespace; `source` names where they came from.
std::vector<std::uint32_t> parse_ids(std::string_view source, std::string_view text) {
    std::vector<std::uint32_t> ids;
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t start = text.find_first_not_of(", \t\r\n", i);
        if (start == std::string_view::npos) {
            break;
        }
        const std::size_t end = std::min(text.find_first_of(", \t\r\n", start), text.size());
        ids.push_back(vkf::app::parse_integer<std::uint32_t>(source, text.substr(start, end - start), 0));
        i = end;
    }
    if (ids.empty()) {
        throw vkf::app::UsageError(std::string(source) + ": no token ids given");
    }
    return ids;
}

// A command-line file that cannot be read is a usage error (exit status 2).
std::string read_ids_file(const std::string& path) {
    try {
        return vkf::read_text_file(path);
    } catch (const vkf::Error& e) {
        throw vkf::app::UsageError(std::string("--prompt-ids-file: ") + e.what());
    }
}

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    cli.footer(kFooter);
    add_text(cli, "--model", "DIR", o.model, "the checkpoint directory")->required();
    // One prompt option, once: a second prompt is more likely a mistake than an override.
    const auto no_prompt_yet = [&o] {
        if (!o.prompt.empty() || o.prompt_text) {
            throw UsageError("give the prompt once, with --prompt, --prompt-ids or --prompt-ids-file");
        }
    };
    const auto set_prompt = [&o, no_prompt_yet](std::vector<std::uint32_t> ids) {
        no_prompt_yet();
        o.prompt = std::move(ids);
    };
    add_parsed_option(cli, "--prompt", "TEXT", "the prompt as text (tokenized with the model's tokenizer.json)",
                      [&o, no_prompt_yet](const std::string& text) {
                          no_prompt_yet();
                          o.prompt_text = text;
                      });
    add_parsed_option(cli, "--prompt-ids", "LIST", "prompt token ids, separated by commas",
                      [set_prompt](const std::string& text) { set_prompt(parse_ids("--prompt-ids", text)); });
    add_parsed_option(cli, "--prompt-ids-file", "F", "prompt token ids in a file, separated by commas or whitespace",
                      [set_prompt](const std::string& path) { set_prompt(parse_ids(path, read_ids_file(path))); });
    add_integer(cli, "--n-predict", "N", o.n_predict, 1,
                "most tokens to generate (default 32; per turn with --interactive)");
    add_text(cli, "--tokenizer", "FILE", o.tokenizer, "tokenizer.json (default: the model directory's)");
    add_parsed_option(cli, "--stop", "STRING",
                      "end generation where the text contains STRING (not printed;\nrepeatable)",
                      [&o](const std::string& text) {
                          if (text.empty()) {
                              throw UsageError("--stop: the stop string is empty");
                          }
                          o.stops.push_back(text);
                      });
    cli.add_flag("--ignore-eos", o.ignore_eos, "generate past the end-of-sequence token");
    cli.add_flag("--interactive", o.interactive,
                 "read prompts from stdin, one per line, and answer each in the same\n"
                 "session: the KV cache keeps the whole conversation (until --ctx)");
    add_integer(cli, "--ctx", "N", o.ctx, 2, "--interactive: KV-cache capacity in tokens (default 2048)");
    add_number(cli, "--temp", "T", o.sampling.temperature, "sampling temperature (default 0: greedy)");
    add_integer(cli, "--top-k", "K", o.sampling.top_k, 0, "sample among the K most likely tokens (default 0: all)");
    add_number(cli, "--top-p", "P", o.sampling.top_p,
               "sample from the smallest set whose probability reaches P (default 1)");
    add_integer(cli, "--seed", "S", o.sampling.seed, 0, "sampling seed (default 0)");
    add_choice(cli, "--weights", o.weights,
               {{"f32", *vkf::parse_weight_format("f32")},
                {"f16", *vkf::parse_weight_format("f16")},
                {"q8_0", *vkf::parse_weight_format("q8_0")},
                {"q4_0", *vkf::parse_weight_format("q4_0")}},
               "weight storage on the device: q8_0 and q4_0 quantize the\n"
               "matrices at load time (docs/QUANTIZATION.md); default: a\n"
               "quantized checkpoint's own format, f16 for an all-F16\ncheckpoint, else f32");
    add_choice(cli, "--kv", o.kv, {{"f32", vkf::DType::F32}, {"f16", vkf::DType::F16}},
               "KV-cache storage on the device (default f16: half the memory\nand the attention reads of f32)");
    add_integer(cli, "--chunk", "N", o.chunk, 1, "most prompt tokens per submission (default 128)");
    add_device_options(cli, o.device);
    cli.add_flag("--profile", o.profile, "time every dispatch and print GPU time per op kind");
    cli.add_flag("--skip-weight-check", o.skip_weight_check,
                 "load weights without refusing NaN or infinite values (checked by default)");
    cli.add_flag("--unfused", o.unfused,
                 "LayerNorms as dispatches of their own, Q and K/V repacked by\n"
                 "separate passes, every step recorded anew (the portable path, also\n"
                 "taken by devices with too few storage buffers per shader stage for\n"
                 "the fused QKV kernel)");
    cli.add_flag("--int8-activations", o.int8_activations,
                 "q8_0/q4_0 weights: round the matmuls' inputs to int8 per block\n"
                 "for the integer dot-product path where the device has it (changes\n"
                 "the numerics: --check then measures its error)");
    cli.add_flag("--check", o.check,
                 "run the double-precision CPU reference model on the same tokens\n"
                 "and print the largest relative logit error over all steps; exit\n"
                 "with status 3 when it is above --check-tolerance");
    add_number(cli, "--check-tolerance", "E", o.check_tolerance, "(default 1e-3)", true);
    add_text(cli, "--logits-out", "F.npy", o.logits_out,
             "write the float32 logits of every generated step [n_predict, vocab]");
    cli.add_flag("--json", o.json, "print one JSON object instead of text");
    cli.add_flag("--quiet", o.quiet, "no progress output on stderr");
}

// What the options cannot check one at a time.
void check_options(const Options& o) {
    if (o.interactive) {
        if (!o.prompt.empty() || o.prompt_text) {
            throw vkf::app::UsageError("--interactive reads the prompts from stdin; give no --prompt or --prompt-ids");
        }
        if (o.check || o.json || !o.logits_out.empty()) {
            throw vkf::app::UsageError("--check, --json and --logits-out apply to one prompt, not --interactive");
        }
    } else if (o.prompt.empty() && !o.prompt_text) {
        throw vkf::app::UsageError("give the prompt with --prompt, --prompt-ids or --prompt-ids-file");
    }
    if (!o.stops.empty() && !o.prompt_text && !o.interactive) {
        throw vkf::app::UsageError("--stop needs text: give the prompt with --prompt");
    }
    try {
        vkf::validate(o.sampling);
    } catch (const vkf::Error& e) {
        throw vkf::app::UsageError(e.what());
    }
}

struct CheckResult {
    double max_rel = 0.0;  // the largest per-step max |gpu - ref| / max |ref|
    std::uint32_t worst_step = 0;
    // Quantized at load time: the same against the reference on the original weights (the
    // format's own error; max_rel is the kernels' error, against the dequantized weights).
    std::optional<double> original_max_rel;
    double seconds = 0.0;
};

// The reference runs once over prompt + generated[0 .. n-2]: the row of position
// prompt - 1 + s holds the logits step s was sampled from.
CheckResult check_logits(const vkf::Model& model, std::span<const std::uint32_t> prompt,
                         const vkf::GenerationResult& result, bool quiet) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::uint32_t> ids(prompt.begin(), prompt.end());
    ids.insert(ids.end(), result.tokens.begin(), result.tokens.end() - 1);
    const std::size_t vocab = model.config().vocab_size;
    auto line = std::make_shared<vkf::app::ProgressLine>(!quiet);
    // The largest per-step error against a reference run with `options`, and its step.
    const auto worst_against = [&](vkf::reference::ModelOptions options, const char* what) {
        options.progress = [line, what](std::uint32_t layer, std::uint32_t n_layer) {
            line->update(static_cast<double>(layer + 1) / n_layer,
                         fmt::format("check: CPU reference model ({}), layer {} of {}", what, layer + 1, n_layer));
        };
        const vkf::reference::Model reference(model.config(), model.checkpoint(), options);
        // In the session's chunks where they cover exactly these tokens (a first turn).
        const bool same_chunks = !result.chunk_ends.empty() && result.chunk_ends.back() == ids.size();
        const std::vector<double> ref =
            same_chunks ? reference.forward(ids, result.chunk_ends) : reference.forward(ids);
        std::pair<double, std::uint32_t> worst{0.0, 0};
        for (std::uint32_t s = 0; s < result.tokens.size(); ++s) {
            const std::size_t row = prompt.size() - 1 + s;
            const vkf::ErrorStats e = vkf::compare_to_reference(std::span(result.logits).subspan(s * vocab, vocab),
                                                                std::span(ref).subspan(row * vocab, vocab));
            if (!(e.max_rel <= worst.first)) {
                worst = {e.max_rel, s};
            }
        }
        return worst;
    };
    // The weights the GPU reads: fp16 norms and biases, and the exact dequantized blocks.
    const vkf::WeightFormat format = model.weight_format();
    CheckResult check;
    std::tie(check.max_rel, check.worst_step) = worst_against(
        {.round_weights_to_f16 = format.dense == vkf::DType::F16, .quantize = format.quant}, "weights as stored");
    if (format.quant != vkf::QuantFormat::None &&
        vkf::checkpoint_quantization(model.checkpoint()) == vkf::QuantFormat::None) {
        check.original_max_rel = worst_against({}, "original weights").first;
    }
    check.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return check;
}

std::string_view stop_reason_name(vkf::StopReason reason) {
    switch (reason) {
        case vkf::StopReason::Length:
            return "length";
        case vkf::StopReason::StopToken:
            return "eos";
        case vkf::StopReason::Caller:
            return "stop string";
        case vkf::StopReason::CacheFull:
            return "cache full";
    }
    return "unknown";
}

// --interactive: each line of stdin is a turn; the answers continue one sequence, whose KV
// cache keeps every earlier turn, so a turn costs its own tokens, not the conversation's.
int chat(vkf::Session& session, const vkf::text::Tokenizer& tokenizer, const Options& o,
         const std::vector<std::uint32_t>& stop_ids) {
    const bool tty = ::isatty(0) != 0;
    // The last token of the previous answer: sampled, not yet run through the model.
    std::optional<std::uint32_t> pending;
    std::string line;
    for (std::uint64_t turn = 0;; ++turn) {
        if (tty) {
            fmt::print(stderr, "> ");
        }
        if (!std::getline(std::cin, line)) {
            break;
        }
        // Special tokens (a BOS) only where the conversation starts.
        std::vector<std::uint32_t> ids;
        try {
            ids = tokenizer.encode(line, !pending.has_value());
        } catch (const vkf::Error& e) {  // a bad line (not UTF-8) ends no conversation
            fmt::print(stderr, "vkf-run: {}\n", e.what());
            continue;
        }
        if (pending) {
            ids.insert(ids.begin(), *pending);
        }
        if (ids.empty()) {
            continue;
        }
        const std::uint64_t room = std::uint64_t{session.max_tokens()} - session.position();
        if (ids.size() + 1 > room) {
            fmt::print(stderr, "vkf-run: the conversation fills the {}-token KV cache (--ctx); ending it\n",
                       session.max_tokens());
            break;
        }
        vkf::app::StreamedText streamed(tokenizer, o.stops, stdout);
        vkf::SamplingParams sampling = o.sampling;
        sampling.seed += turn;  // not the same random draws every turn
        const vkf::GenerationResult result = vkf::generate(
            session, ids,
            vkf::GenerationOptions{
                .n_predict = static_cast<std::uint32_t>(std::min<std::uint64_t>(o.n_predict, room - ids.size() + 1)),
                .sampling = sampling,
                .stop_ids = stop_ids,
                .on_token = [&streamed](std::uint32_t, std::uint32_t id) { return streamed.push(id); }});
        streamed.finish();
        fmt::print("\n");
        std::fflush(stdout);
        pending = result.tokens.back();
    }
    if (!o.quiet) {
        fmt::print(stderr, "vkf-run: {} tokens in the session\n", session.position());
    }
    return vkf::app::kExitOk;
}

int run(const Options& o) {
    vkf::Context ctx(o.device.context_options());
    const bool progress = !o.quiet;

    // The prompt first: the model is refused before loading when it and a session of this
    // many tokens cannot fit the device's memory.
    std::optional<vkf::text::Tokenizer> tokenizer;
    if (o.prompt_text || o.interactive) {
        tokenizer = vkf::app::load_model_tokenizer(o.model, o.tokenizer);
    }
    std::vector<std::uint32_t> prompt = o.prompt;
    if (o.prompt_text) {
        prompt = tokenizer->encode(*o.prompt_text);
        if (prompt.empty()) {
            throw vkf::Error("--prompt: the text encodes to no tokens");
        }
    }
    // Counted in 64 bits: a 2-token prompt and --n-predict 4294967295 would wrap to 0 in 32.
    const std::uint64_t positions = o.interactive ? o.ctx : std::uint64_t{prompt.size()} + o.n_predict - 1;
    if (positions > vkf::ModelLimits::max_seq_len) {
        throw vkf::app::UsageError(
            fmt::format("a {}-token prompt and --n-predict {} need {} positions; vkformer's sessions hold at most {}",
                        prompt.size(), o.n_predict, positions, vkf::ModelLimits::max_seq_len));
    }
    const auto max_tokens = static_cast<std::uint32_t>(positions);

    const auto load_start = std::chrono::steady_clock::now();
    vkf::ModelOptions model_options{.weights = o.weights,
                                    .check_finite_weights = !o.skip_weight_check,
                                    .session = {.max_tokens = max_tokens, .chunk = o.chunk, .kv_dtype = o.kv}};
    auto load_line = std::make_shared<vkf::app::ProgressLine>(progress);
    model_options.progress = [load_line, last = -1](const vkf::WeightUploadProgress& p) mutable {
        const int percent = p.total_bytes ? static_cast<int>(100 * p.bytes_done / p.total_bytes) : 100;
        if (percent != last) {
            last = percent;
            load_line->update(percent / 100.0,
                              fmt::format("loading weights: {}% of {}", percent, vkf::size_text(p.total_bytes)));
        }
    };
    const vkf::Model model(ctx, o.model, model_options);
    const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    const vkf::ModelConfig& config = model.config();
    const std::vector<std::uint32_t> stop_ids = o.ignore_eos ? std::vector<std::uint32_t>{} : config.eos_token_ids;

    vkf::Session session(model, vkf::SessionOptions{.max_tokens = max_tokens,
                                                    .chunk = o.chunk,
                                                    .profiling = o.profile,
                                                    .fuse_qkv = !o.unfused,
                                                    .fuse_layernorm = !o.unfused,
                                                    .kv_dtype = o.kv,
                                                    .int8_activations = o.int8_activations});
    if (progress) {
        fmt::print(stderr,
                   "{}: {} layers, hidden {}, {} heads, vocab {}, {} weights ({}), {} KV cache (session {}), on {}\n",
                   vkf::family_name(config.family), config.n_layer, config.hidden, config.n_head, config.vocab_size,
                   vkf::to_string(model.weight_format()), vkf::size_text(model.weights().bytes),
                   vkf::to_string(session.kv_dtype()), vkf::size_text(session.device_bytes()), ctx.device_info().name);
    }
    if (progress && !ctx.memory_stats().note.empty()) {
        fmt::print(stderr, "vkf-run: {}\n", ctx.memory_stats().note);
    }
    if (o.interactive) {
        return chat(session, *tokenizer, o, stop_ids);
    }
    vkf::GenerationOptions gen{.n_predict = o.n_predict,
                               .sampling = o.sampling,
                               .keep_logits = o.check || !o.logits_out.empty(),
                               .stop_ids = stop_ids};
    // Text streams to stdout as it is made (collected only, for --json); ids get a progress line.
    std::optional<vkf::app::StreamedText> streamed;
    if (o.prompt_text) {
        streamed.emplace(*tokenizer, o.stops, o.json ? nullptr : stdout);
        if (!o.json) {
            fmt::print("{}", *o.prompt_text);
            std::fflush(stdout);
        }
        gen.on_token = [&streamed](std::uint32_t, std::uint32_t id) { return streamed->push(id); };
    } else {
        auto gen_line = std::make_shared<vkf::app::ProgressLine>(progress);
        gen.on_token = [gen_line, n = o.n_predict](std::uint32_t i, std::uint32_t) {
            gen_line->update(static_cast<double>(i + 1) / n, fmt::format("generating: {} of {} tokens", i + 1, n));
            return true;
        };
    }
    const vkf::GenerationResult result = vkf::generate(session, prompt, gen);
    if (streamed) {
        streamed->finish();
        if (!o.json) {
            fmt::print("\n\n");
        }
    }

    if (!o.logits_out.empty()) {
        const std::size_t shape[] = {result.tokens.size(), config.vocab_size};
        vkf::write_npy_f32(o.logits_out, shape, result.logits);
    }
    std::optional<CheckResult> check;
    if (o.check) {
        check = check_logits(model, prompt, result, o.quiet);
    }
    double profile_total = 0.0;
    for (const auto& [kind, p] : session.profile()) {
        profile_total += p.ms;
    }

    if (o.json) {
        const vkf::MemoryStats memory = ctx.memory_stats();
        nlohmann::ordered_json json = {
            {"device", ctx.device_info()},
            {"model",
             {{"path", o.model},
              {"family", vkf::family_name(config.family)},
              {"n_layer", config.n_layer},
              {"hidden", config.hidden},
              {"n_head", config.n_head},
              {"vocab_size", config.vocab_size},
              {"weights", vkf::to_string(model.weight_format())},
              {"weight_bytes", model.weights().bytes},
              {"load_seconds", load_seconds}}},
            {"sampling",
             {{"temperature", double{o.sampling.temperature}},
              {"top_k", o.sampling.top_k},
              {"top_p", double{o.sampling.top_p}},
              {"seed", o.sampling.seed}}},
            {"prompt_ids", prompt},
            {"generated_ids", result.tokens},
            {"stop_reason", stop_reason_name(result.stop)},
            {"prefill_seconds", result.prefill_time.count()},
            {"decode_seconds", result.decode_time.count()},
            {"prefill_tokens_per_second", result.prefill_tokens_per_second()},
            {"decode_tokens_per_second", result.decode_tokens_per_second()},
            {"kv", vkf::to_string(session.kv_dtype())},
            {"submissions", session.submissions()},
            {"session_device_bytes", session.device_bytes()},
            // Device buffers that went to host-visible memory because device-local memory
            // was full (runtime/memory.hpp), and why; 0 and null on most devices.
            {"host_visible_fallback_bytes", memory.fallback_buffer_bytes},
            {"memory_note",
             memory.note.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(memory.note)},
        };
        if (streamed) {
            json["prompt"] = *o.prompt_text;
            json["text"] = streamed->text();
        }
        if (check) {
            json["check"] = {{"max_rel_logit_error", check->max_rel},
                             {"worst_step", check->worst_step},
                             {"reference_seconds", check->seconds}};
            if (check->original_max_rel) {
                json["check"]["max_rel_logit_error_vs_original_weights"] = *check->original_max_rel;
            }
        }
        if (o.profile) {
            json["profile"] = nlohmann::ordered_json::object();
            for (const auto& [kind, p] : session.profile()) {
                json["profile"][kind] = {{"gpu_ms", p.ms}, {"dispatches", p.dispatches}};
            }
        }
        fmt::print("{}\n", vkf::json_text(json));
        return check && !(check->max_rel <= o.check_tolerance) ? vkf::app::kExitCheckFailed : vkf::app::kExitOk;
    }

    if (!streamed) {
        fmt::print("generated: {}\n", fmt::join(result.tokens, " "));
    }
    if (result.stop != vkf::StopReason::Length) {
        fmt::print("stopped after {} tokens: {}\n", result.tokens.size(),
                   result.stop == vkf::StopReason::StopToken ? "end-of-sequence token" : "stop string");
    }
    fmt::print("prefill: {} tokens in {:.3f} s, {:.2f} tokens/s\n", prompt.size(), result.prefill_time.count(),
               result.prefill_tokens_per_second());
    fmt::print("decode:  {} tokens in {:.3f} s, {:.2f} tokens/s\n", result.tokens.size() - 1,
               result.decode_time.count(), result.decode_tokens_per_second());
    if (o.profile) {
        fmt::print("GPU time by op kind over {} submissions ({:.1f} ms in all):\n", session.submissions(),
                   profile_total);
        std::vector<std::pair<std::string, vkf::OpProfile>> kinds(session.profile().begin(), session.profile().end());
        std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
        for (const auto& [kind, p] : kinds) {
            fmt::print("  {:<22} {:>10.1f} ms {:>5.1f}% {:>8} dispatches\n", kind, p.ms,
                       profile_total > 0 ? 100.0 * p.ms / profile_total : 0.0, p.dispatches);
        }
    }
    if (check) {
        fmt::print(
            "check: largest relative logit error {:.3g} (step {} of {}; max |gpu - ref| / max |ref| per "
            "step, CPU reference in {:.1f} s)\n",
            check->max_rel, check->worst_step, result.tokens.size(), check->seconds);
        if (check->original_max_rel) {
            fmt::print(
                "check: largest relative logit error {:.3g} against the original (unquantized) weights: the "
                "{} format's own error\n",
                *check->original_max_rel, vkf::to_string(model.weight_format()));
        }
        if (!(check->max_rel <= o.check_tolerance)) {
            fmt::print("check: FAILED, above the tolerance {}\n", o.check_tolerance);
            return vkf::app::kExitCheckFailed;
        }
    }
    return vkf::app::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-run", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] {
        check_options(options);
        return run(options);
    });
}
