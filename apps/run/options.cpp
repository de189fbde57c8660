#include "apps/run/options.hpp"
#include "apps/run/sampler_options.hpp"

#include "apps/common/layer_split.hpp"
#include "apps/common/text_source.hpp"

#include "base/error.hpp"
#include "host/dist/launch.hpp"
#include "host/io/text_file.hpp"
#include "host/model/layer_range.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace vkf::run_cli {

namespace {

constexpr const char* kFooter =
    "Ctrl-C (SIGINT) or SIGTERM ends generation after the current token, ends the output\n"
    "line and saves the pipeline cache.\n"
    "exit status: 0 ok, 1 failure (a failed write to stdout included), 2 bad command line,\n"
    "3 --check above the tolerance, 130 after SIGINT, 143 after SIGTERM";

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
        ids.push_back(app::parse_integer<std::uint32_t>(source, text.substr(start, end - start), 0));
        i = end;
    }
    if (ids.empty()) {
        throw app::UsageError(std::string(source) + ": no token ids given");
    }
    return ids;
}

// A command-line file that cannot be read is a usage error (exit status 2).
std::string read_option_file(std::string_view option, const std::string& path) {
    try {
        return read_text_file(path);
    } catch (const Error& e) {
        throw app::UsageError(std::string(option) + ": " + e.what());
    }
}

}  // namespace

std::vector<FilePrompt> read_prompt_file(const std::string& path) {
    const std::string text = read_option_file("--prompt-file", path);
    try {
        app::check_utf8(text, "--prompt-file '" + path + "'");
    } catch (const Error& e) {
        throw app::UsageError(e.what());
    }
    std::vector<FilePrompt> prompts;
    std::uint32_t line = 0;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        std::string_view piece(text.data() + start, end - start);
        ++line;
        if (piece.ends_with('\r')) {
            piece.remove_suffix(1);
        }
        if (piece.find_first_not_of(" \t\r\f\v") != std::string_view::npos) {
            prompts.push_back({line, std::string(piece)});
        }
        start = end + 1;
    }
    if (prompts.empty()) {
        throw app::UsageError("--prompt-file: " + path + " holds no prompt (one per line; empty lines are skipped)");
    }
    return prompts;
}

void declare_options(CLI::App& cli, Options& o) {
    using namespace app;
    cli.footer(kFooter);
    add_text(cli, "--model", "DIR", o.model, "the checkpoint directory, or a llama.cpp GGUF file (BLOOM)")->required();
    // One prompt option, once: a second prompt is more likely a mistake than an override.
    const auto no_prompt_yet = [&o] {
        if (!o.prompt.empty() || o.prompt_text || !o.prompt_file.empty()) {
            throw UsageError("give the prompt once, with --prompt, --prompt-ids, --prompt-ids-file or --prompt-file");
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
                      [set_prompt](const std::string& path) {
                          set_prompt(parse_ids(path, read_option_file("--prompt-ids-file", path)));
                      });
    add_parsed_option(cli, "--prompt-file", "F",
                      "text prompts, one per line (empty lines skipped), each generated\n"
                      "on its own and printed as a block labelled with its line number;\n"
                      "--parallel of them run at once",
                      [&o, no_prompt_yet](const std::string& path) {
                          no_prompt_yet();
                          o.file_prompts = read_prompt_file(path);
                          o.prompt_file = path;
                      });
    add_integer(cli, "--parallel", "N", o.parallel, 1,
                "--prompt-file: how many prompts run at once, as one batch over a\n"
                "paged KV cache; the others queue and join as earlier ones finish\n"
                "(default 1)");
    cli.add_flag("--no-prefix-cache", o.no_prefix_cache,
                 "--prompt-file: forget a finished prompt's KV blocks (default: keep\n"
                 "them until the cache needs them, and a later prompt that starts\n"
                 "the same way, a shared preamble, takes them)");
    add_integer(cli, "--n-predict", "N", o.n_predict, 1,
                "most tokens to generate (default 32; per turn with --interactive,\nper prompt with --prompt-file)");
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
                 "session: the KV cache keeps the whole conversation; an answer ends\n"
                 "where the cache (--ctx) is full, and a later line that does not fit\n"
                 "what is left is refused with a message (the session reads on)");
    add_integer(cli, "--ctx", "N", o.ctx, 2,
                "KV-cache capacity in tokens (default 2048): a run whose cache fills\n"
                "ends there (stop reason \"length\"), unless a window frees it");
    add_window(cli, o.window,
               "local attention: each token sees the W tokens before it (default:\n"
               "the model's, MPT sliding_window_size; 0: all). The cache keeps only\n"
               "what the window sees, and generation goes on past --ctx");
    add_number(cli, "--temp", "T", o.sampling.temperature, "sampling temperature (default 0: greedy)");
    add_integer(cli, "--top-k", "K", o.sampling.top_k, 0, "sample among the K most likely tokens (default 0: all)");
    add_number(cli, "--top-p", "P", o.sampling.top_p,
               "sample from the smallest set whose probability reaches P (default 1)");
    add_integer(cli, "--seed", "S", o.sampling.seed, 0,
                "sampling seed (default 0; --prompt-file: S + the prompt's index,\n"
                "so a prompt's draws do not depend on the others)");
    add_sampler_chain_options(cli, o.sampling);
    add_text(cli, "--grammar", "FILE", o.grammar_file,
             "GBNF the generated text must follow (llama.cpp's notation;\n--prompt runs; docs/SERVER.md "
             "\"Constrained output\")");
    add_text(cli, "--json-schema", "FILE", o.json_schema_file,
             "a JSON schema the generated text must validate against\n(the subset of docs/SERVER.md; --prompt runs)");
    add_weight_format(cli, o.weights,
                      "weight storage on the device: q8_0 and q4_0 quantize the\n"
                      "matrices at load time (docs/QUANTIZATION.md); default: a\n"
                      "quantized checkpoint's own format, f16 for an all-F16\ncheckpoint, else f32");
    app::add_kv_flags(cli, o.kv,
                      "KV-cache storage on the device (default f16: half the memory\nand the attention reads of f32; "
                      "q8_0 and q4_0 quantize\nK and V: 0.53x and 0.28x the memory of f16)");
    add_integer(cli, "--chunk", "N", o.chunk, 1, "most prompt tokens per submission (default 128)");
    add_device_options(cli, o.device);
    app::add_device_list(cli, o.devices);
    add_text(cli, "--split", "auto|N,N,...", o.split,
             "layers per device of --devices: auto (default) divides them\n"
             "by each device's memory budget, or the count of each stage");
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
                 "and print the largest relative logit error over all steps (of\n"
                 "every prompt); exit with status 3 when it is above --check-tolerance");
    add_number(cli, "--check-tolerance", "E", o.check_tolerance, "(default 1e-3)", true);
    add_text(cli, "--logits-out", "F.npy", o.logits_out,
             "write the float32 logits of every generated step [n_predict, vocab]");
    add_text(cli, "--prompt-cache", "FILE", o.prompt_cache,
             "a saved state of this model: the prompt's first tokens it holds\n"
             "are not run again; rewritten after the run with the prompt's\n"
             "(one prompt on one device, no --window)");
    cli.add_flag("--json", o.json, "print one JSON object instead of text");
    cli.add_flag("--quiet", o.quiet, "no progress output on stderr");
    // The layer split over MPI ranks (docs/DISTRIBUTED.md); --split gives each rank's layers.
    cli.add_option("--rank-timeout", o.rank_timeout,
                   "under mpirun: seconds without a message from a rank after which it counts as failed and "
                   "every rank exits naming it (default 20)")
        ->check(CLI::Range(0.5, 86400.0));
}

void check_distributed_options(const Options& o) {
    using app::UsageError;
    if (o.interactive) {
        throw UsageError(
            "under mpirun, vkf-run runs one prompt (--prompt or --prompt-ids) or a --prompt-file, not "
            "--interactive");
    }
    if (o.check || o.profile) {
        throw UsageError("--check and --profile need the whole model in one process; run without mpirun");
    }
    if (!o.devices.empty()) {
        throw UsageError("under mpirun each rank runs on one device: give no --devices (--device picks it)");
    }
    if (!o.prompt_cache.empty()) {
        throw UsageError("--prompt-cache saves and loads a state on one device; run without mpirun");
    }
}

void check_options(const Options& o) {
    using app::UsageError;
    const bool file = !o.prompt_file.empty();
    if (o.interactive) {
        if (!o.prompt.empty() || o.prompt_text || file) {
            throw UsageError(
                "--interactive reads the prompts from stdin; give no --prompt, --prompt-ids or --prompt-file");
        }
        if (o.check || o.json || !o.logits_out.empty()) {
            throw UsageError("--check, --json and --logits-out apply to one prompt, not --interactive");
        }
    } else if (o.prompt.empty() && !o.prompt_text && !file) {
        throw UsageError("give the prompt with --prompt, --prompt-ids, --prompt-ids-file or --prompt-file");
    }
    if (!o.prompt_cache.empty() && (o.interactive || file || !o.devices.empty() || o.window.value_or(0) != 0)) {
        throw UsageError(
            "--prompt-cache runs one prompt (--prompt or --prompt-ids) on one device without a --window: give no "
            "--interactive, --prompt-file, --devices or --window");
    }
    if (o.parallel > 1 && !file) {
        throw UsageError("--parallel runs the prompts of a --prompt-file at once; give --prompt-file");
    }
    if (file && !o.logits_out.empty()) {
        throw UsageError("--logits-out writes one prompt's logits; give --prompt or --prompt-ids, not --prompt-file");
    }
    if (!o.stops.empty() && !o.prompt_text && !file && !o.interactive) {
        throw UsageError("--stop needs text: give the prompt with --prompt or --prompt-file");
    }
    if (!o.grammar_file.empty() || !o.json_schema_file.empty()) {
        if (!o.grammar_file.empty() && !o.json_schema_file.empty()) {
            throw UsageError("--grammar and --json-schema: give one of them");
        }
        if (!o.prompt_text || file || o.interactive) {
            throw UsageError("--grammar and --json-schema constrain a --prompt run (text, one prompt)");
        }
    }
    try {
        validate(o.sampling);
    } catch (const Error& e) {
        throw UsageError(e.what());
    }
    split_counts(o);  // refuses bad text early
    if (o.split && o.devices.empty() && !dist::started_by_mpirun_with_ranks()) {
        throw UsageError(
            "--split divides the layers over --devices (or over MPI ranks under mpirun -n R); give "
            "--devices");
    }
    if (!o.devices.empty()) {
        if (o.device.device) {
            throw UsageError("--device and --devices: give one of them");
        }
        if (o.interactive || o.profile) {
            throw UsageError(
                "--devices runs one prompt (--prompt or --prompt-ids) or a --prompt-file, without --interactive "
                "or --profile");
        }
        if (o.devices.size() < 2 && !o.prompt_file.empty()) {
            throw UsageError("--devices splits the model over at least two devices (the same one twice is two)");
        }
        app::check_split_stages(o.split, o.devices.size());
    }
}

std::vector<std::uint32_t> split_counts(const Options& o) {
    return app::layer_split_counts(o.split);
}

SessionOptions session_options(const Options& o, std::uint32_t max_tokens, std::uint32_t chunk, std::uint32_t window) {
    return with_run_flags(o, SessionOptions{.max_tokens = max_tokens, .chunk = chunk, .window = window});
}

}  // namespace vkf::run_cli
