// vkf-run: generates text or tokens with a decoder checkpoint (BLOOM, MPT, Falcon-RW,
// Baichuan, Jais; Hugging Face config.json + safetensors, tokenizer.json for text) on a Vulkan
// device: prefill of the prompt, then decode through the KV cache. Streams the generated text
// (--prompt) or prints the generated ids (--prompt-ids), then the prefill and decode
// throughput; --profile adds GPU time per op kind, --check compares every step's logits with
// the double-precision CPU reference model, --json prints one JSON object for scripts,
// --interactive keeps one session (and its KV cache) over the turns of a conversation read
// from stdin, --prompt-file runs many prompts, --parallel of them at once in one batch,
// --devices splits the model by layers over several devices (apps/run/local_stages.cpp).
//
// Under `mpirun -n R`, the model is split by layers over the ranks (apps/run/distributed.hpp).
//
// The pieces live in apps/run/: options, check, chat, load, report, the stages of each topology
// (stages.hpp: local_stages.cpp, distributed.cpp) and the two paths over them (one_prompt.cpp,
// prompt_file.cpp).

#include "apps/common/app_main.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/run/chat.hpp"
#include "apps/run/distributed.hpp"
#include "apps/run/load.hpp"
#include "apps/run/options.hpp"
#include "apps/run/report.hpp"
#include "apps/run/stages.hpp"
#include "base/error.hpp"
#include "host/dist/launch.hpp"

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

// --interactive: one session (and its KV cache) over the turns read from stdin, on one device.
int run_chat(vkf::Context& ctx, const Options& o) {
    const vkf::text::Tokenizer tokenizer = vkf::app::load_model_tokenizer(o.model, o.tokenizer);
    if (o.ctx > vkf::ModelLimits::max_seq_len) {
        throw vkf::app::UsageError(fmt::format("--ctx {}: vkformer's sessions hold at most {} positions", o.ctx,
                                               vkf::ModelLimits::max_seq_len));
    }
    const std::uint32_t max_tokens = o.ctx;
    const LoadedModel loaded = load_model(ctx, o,
                                          {.max_tokens = max_tokens,
                                           .chunk = o.chunk,
                                           .kv_dtype = o.kv.dense,
                                           .kv_k_quant = o.kv.k_quant(),
                                           .kv_v_quant = o.kv.v_quant(),
                                           .window = o.window.value_or(0)});
    const vkf::Model& model = *loaded.model;
    const std::uint32_t window = vkf::app::run_window(o.window, model.config());
    vkf::Session session(model, session_options(o, max_tokens, o.chunk, window));
    // The decoding step's pipelines now; each turn's prompt shape is made at its turn.
    const vkf::PreparationStats prepared = session.prepare(1);
    print_model_line(ctx, model, o, session.device_bytes(), "session");
    if (!o.quiet) {
        fmt::print(stderr, "{}\n", prepare_line(prepared));
    }
    return chat(session, tokenizer, o, o.ignore_eos ? std::vector<std::uint32_t>{} : model.config().eos_token_ids);
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-run", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] {
        check_options(options);
        vkf::app::install_stop_signals();
        // One prompt or a prompt file, over whichever topology runs it (apps/run/stages.hpp).
        const auto drive = [&options](RunStages& stages) {
            return options.prompt_file.empty() ? run_prompt(stages, options) : run_prompt_file(stages, options);
        };
        if (vkf::dist::started_by_mpirun_with_ranks()) {
            check_distributed_options(options);
            return run_distributed(options, drive);  // throws where MPI support was not built
        }
        if (options.interactive) {
            vkf::Context ctx(options.device.context_options());
            return run_chat(ctx, options);
        }
        return drive(*local_stages(options));
    });
}
