// vkf-run: generates text or tokens with a decoder checkpoint (BLOOM, MPT, Falcon-RW,
// Baichuan, Jais; Hugging Face config.json + safetensors, tokenizer.json for text) on a Vulkan
// device: prefill of the prompt, then decode through the KV cache. Streams the generated text
// (--prompt) or prints the generated ids (--prompt-ids), then the prefill and decode
// throughput; --profile adds GPU time per op kind, --check compares every step's logits with
// the double-precision CPU reference model, --json prints one JSON object for scripts,
// --interactive keeps one session (and its KV cache) over the turns of a conversation read
// from stdin, --prompt-file runs many prompts, --parallel of them at once in one batch,
// --devices splits the model by layers over several devices (apps/run/split.cpp).
//
// Under `mpirun -n R`, the model is split by layers over the ranks (apps/run/distributed.hpp).
//
// The pieces live in apps/run/: options, check, chat, load, report, parallel and distributed.

#include "apps/common/app_main.hpp"
#include "apps/common/gguf_model.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/progress_line.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/common/streamed_text.hpp"
#include "apps/common/text_source.hpp"
#include "apps/run/chat.hpp"
#include "apps/run/check.hpp"
#include "apps/run/distributed.hpp"
#include "apps/run/load.hpp"
#include "apps/run/options.hpp"
#include "apps/run/parallel.hpp"
#include "apps/run/report.hpp"
#include "apps/run/split.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "host/dist/launch.hpp"
#include "host/io/npy.hpp"
#include "host/model/generation.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace vkf::run_cli;

constexpr const char* kAbout =
    "Runs a decoder checkpoint (BLOOM, MPT, Falcon-RW, Baichuan, Jais; DIR/config.json +\n"
    "model.safetensors or a sharded checkpoint, or a llama.cpp GGUF file of BLOOM) on the best Vulkan device: the "
    "prompt in one forward pass (prefill), "
    "then one\n"
    "token per step through the KV cache (decode). With --prompt, the text is tokenized with\n"
    "DIR/tokenizer.json (or --tokenizer) and the generated text is printed as it is made;\n"
    "with --prompt-ids, the generated token ids; with --prompt-file, every line's completion\n"
    "as a block labelled with the line's number, --parallel of them generated at once in one\n"
    "batch. Then the prefill and decode throughput.\n"
    "Generation stops after --n-predict tokens, at the model's end-of-sequence token\n"
    "(config.json eos_token_id) or at a --stop string.\n";

int run_one(vkf::Context& ctx, const Options& o) {
    // The prompt first: the model is refused before loading when it and a session of this
    // many tokens cannot fit the device's memory.
    std::optional<vkf::text::Tokenizer> tokenizer;
    if (o.prompt_text || o.interactive) {
        tokenizer = vkf::app::load_model_tokenizer(o.model, o.tokenizer);
    }
    std::vector<std::uint32_t> prompt = o.prompt;
    if (o.prompt_text) {
        vkf::app::check_utf8(*o.prompt_text, "--prompt");
        prompt = tokenizer->encode(*o.prompt_text);
        if (prompt.empty()) {
            throw vkf::Error("--prompt: the text encodes to no tokens");
        }
    }
    // --ctx bounds every run's cache; a run that needs less gets less. Counted in 64 bits: a
    // 2-token prompt and --n-predict 4294967295 would wrap to 0 in 32.
    const std::uint64_t wanted = std::uint64_t{prompt.size()} + o.n_predict - 1;
    const std::uint64_t positions = o.interactive ? o.ctx : std::min<std::uint64_t>(o.ctx, wanted);
    if (positions > vkf::ModelLimits::max_seq_len) {
        throw vkf::app::UsageError(fmt::format("--ctx {}: vkformer's sessions hold at most {} positions", positions,
                                               vkf::ModelLimits::max_seq_len));
    }
    const auto max_tokens = static_cast<std::uint32_t>(positions);
    // The model's own window is known once its config is read; the estimate before loading
    // counts --window's ring or the whole --ctx.
    const LoadedModel loaded = load_model(
        ctx, o, {.max_tokens = max_tokens, .chunk = o.chunk, .kv_dtype = o.kv, .window = o.window.value_or(0)});
    const vkf::Model& model = *loaded.model;
    const vkf::ModelConfig& config = model.config();
    const std::uint32_t window = vkf::app::run_window(o.window, config);
    if (window == 0 && !o.interactive && prompt.size() > max_tokens) {
        throw vkf::app::UsageError(
            fmt::format("a {}-token prompt does not fit the {}-token KV cache (--ctx {}; a "
                        "--window lets a run go past it)",
                        prompt.size(), max_tokens, o.ctx));
    }
    const std::vector<std::uint32_t> stop_ids = o.ignore_eos ? std::vector<std::uint32_t>{} : config.eos_token_ids;

    vkf::Session session(model, session_options(o, max_tokens, o.chunk, window));
    // The steps' pipelines now, not inside the prefill (interactive: the decoding step's;
    // each turn's prompt shape is made at its turn).
    const vkf::PreparationStats prepared =
        session.prepare(o.interactive ? 1 : static_cast<std::uint32_t>(prompt.size()));
    print_model_line(ctx, model, o, session.device_bytes(), "session");
    if (o.interactive) {
        if (!o.quiet) {
            fmt::print(stderr, "{}\n", prepare_line(prepared));
        }
        return chat(session, *tokenizer, o, stop_ids);
    }
    vkf::GenerationOptions gen{.n_predict = o.n_predict,
                               .sampling = o.sampling,
                               .keep_logits = o.check || !o.logits_out.empty(),
                               .stop_ids = stop_ids,
                               .on_prefill = vkf::app::prefill_progress(!o.quiet)};
    // Text streams to stdout as it is made (collected only, for --json); ids get a progress line.
    std::optional<vkf::app::StreamedText> streamed;
    if (o.prompt_text) {
        stream_prompt_text(o, *tokenizer, streamed, gen);
    } else {
        auto gen_line = std::make_shared<vkf::app::ProgressLine>(!o.quiet);
        gen.on_token = [gen_line, n = o.n_predict](std::uint32_t i, std::uint32_t) {
            gen_line->update(static_cast<double>(i + 1) / n, fmt::format("generating: {} of {} tokens", i + 1, n));
            return vkf::app::stop_signal() == 0;
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
        check = check_logits(model, prompt, result, window, o.quiet);
    }
    const bool check_failed = check && !(check->max_rel <= o.check_tolerance);

    OneRun run = one_run(prompt, result, streamed, prepared, window, max_tokens);
    run.kv = vkf::to_string(session.kv_dtype());
    run.check = check ? &*check : nullptr;
    run.device = ctx.device_info();
    run.model = model_json(o, model, loaded.seconds);
    if (o.json) {
        run.after_kv = {{"submissions", session.submissions()}, {"session_device_bytes", session.device_bytes()}};
        run.after_ctx = {{"kv_blocks_in_use", session.blocks_held()}};
        add_memory_json(run.after_ctx, ctx);
        nlohmann::ordered_json json = one_run_json(o, run);
        if (o.profile) {
            json["profile"] = profile_json(session.profile());
        }
        fmt::print("{}\n", vkf::json_text(json));
        return check_failed ? vkf::app::kExitCheckFailed : vkf::app::kExitOk;
    }
    const std::string load_line =
        fmt::format("load:    {} of weights in {:.3f} s", vkf::size_text(model.weights().bytes), loaded.seconds);
    return print_one_run(o, run, model, load_line,
                         o.profile ? profile_text(session.profile(), session.submissions()) : std::string{});
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-run", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] {
        check_options(options);
        // A GGUF file is converted to a checkpoint directory that lives as long as the run
        // (after the options' checks: a usage error costs no conversion).
        const auto gguf = vkf::app::convert_if_gguf(options.model);
        if (gguf) {
            options.model = gguf->dir().string();
        }
        vkf::app::install_stop_signals();
        if (vkf::dist::started_by_mpirun_with_ranks()) {
            check_distributed_options(options);
            return run_distributed(options);  // throws where MPI support was not built
        }
        if (!options.devices.empty()) {
            return options.prompt_file.empty() ? run_split(options) : run_split_prompt_file(options);
        }
        vkf::Context ctx(options.device.context_options());
        return options.prompt_file.empty() ? run_one(ctx, options) : run_prompt_file(ctx, options);
    });
}
