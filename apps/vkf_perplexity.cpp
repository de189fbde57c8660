// vkf-perplexity: how well a model predicts a text at several context lengths, on the
// device: the test of ALiBi's promise that a model trained on short sequences keeps its
// quality on longer ones ("train short, test long").

#include "apps/common/app_main.hpp"
#include "apps/common/kv_flags.hpp"
#include "apps/common/model_tokenizer.hpp"
#include "apps/common/options.hpp"
#include "apps/common/progress_line.hpp"
#include "apps/common/svg_chart.hpp"
#include "apps/common/text_source.hpp"
#include "base/error.hpp"
#include "base/files.hpp"
#include "base/format.hpp"
#include "host/io/json.hpp"
#include "host/io/text_file.hpp"
#include "host/model/perplexity.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr const char* kAbout =
    "Perplexity of a text under a decoder checkpoint (BLOOM, MPT, Falcon-RW, Baichuan, Jais)\n"
    "at each context length, on the best Vulkan device. The text is tokenized with DIR/tokenizer.json (or --tokenizer) "
    "and cut into\n"
    "non-overlapping windows of each length; every window runs on its own from an empty cache,\n"
    "and only its second half is scored (each scored token sees at least half a window of\n"
    "context), as llama.cpp's perplexity tool defines it. Perplexity = exp(mean negative\n"
    "log-likelihood of the scored tokens).\n";

struct Options {
    std::string model;
    std::string file;
    std::string tokenizer;
    std::optional<std::vector<std::uint32_t>> ctx;
    std::size_t max_tokens = 0;
    std::optional<vkf::WeightFormat> weights;
    vkf::app::KvCacheFlags kv;
    std::uint32_t chunk = 128;
    std::optional<std::uint32_t> window;
    vkf::app::DeviceOptions device;
    std::string plot;
    bool json = false;
    bool quiet = false;
};

void declare_options(CLI::App& cli, Options& o) {
    using namespace vkf::app;
    add_text(cli, "--model", "DIR", o.model, "the checkpoint directory")->required();
    add_text(cli, "--file", "TEXT", o.file, "the text to score (UTF-8)")->required();
    add_text(cli, "--tokenizer", "FILE", o.tokenizer, "tokenizer.json (default: the model directory's)");
    add_counts(cli, "--ctx", "LIST", o.ctx,
               "context lengths, comma-separated (default: 1, 2, 4, 8 and 16\ntimes the model's training length)", 4);
    add_integer(cli, "--max-tokens", "N", o.max_tokens, std::size_t{1},
                "score only the text's first N tokens (default: all)");
    add_weight_format(cli, o.weights, "weight storage on the device (as vkf-run)");
    vkf::app::add_kv_flags(cli, o.kv, "KV-cache storage on the device (default f16; as vkf-run)");
    add_integer(cli, "--chunk", "N", o.chunk, 1, "most tokens per submission (default 128)");
    add_window(cli, o.window,
               "local attention: each token sees the W tokens before it (default:\n"
               "the model's, MPT sliding_window_size; 0: all)");
    add_device_options(cli, o.device);
    add_text(cli, "--plot", "FILE.svg", o.plot, "draw perplexity against context length");
    cli.add_flag("--json", o.json, "print one JSON object instead of the table");
    cli.add_flag("--quiet", o.quiet, "no progress output on stderr");
}

void write_plot(const std::string& path, const std::string& title, const std::vector<vkf::PerplexityResult>& results,
                std::uint32_t train_length) {
    vkf::app::LineChart chart{
        .title = title, .x_title = "context length (tokens)", .y_title = "perplexity", .y_from_zero = false};
    chart.series.push_back({.label = "perplexity"});
    for (const vkf::PerplexityResult& r : results) {
        chart.series[0].points.emplace_back(r.windows.ctx, r.perplexity());
    }
    // The 10% band the extrapolation goal allows, from the training length's value.
    for (const vkf::PerplexityResult& r : results) {
        if (r.windows.ctx == train_length) {
            chart.series.push_back({.label = "training length's perplexity + 10%", .color = 1, .dash = 1});
            for (const vkf::PerplexityResult& q : results) {
                chart.series.back().points.emplace_back(q.windows.ctx, 1.1 * r.perplexity());
            }
        }
    }
    vkf::write_file_atomically(path, vkf::app::svg_line_chart(chart), "plot");
}

int run(const Options& o) {
    vkf::Context ctx(o.device.context_options());
    const vkf::text::Tokenizer tokenizer = vkf::app::load_model_tokenizer(o.model, o.tokenizer);
    const std::string text = vkf::read_text_file(o.file);
    vkf::app::check_utf8(text, "'" + o.file + "'");
    std::vector<std::uint32_t> tokens = tokenizer.encode(text, false);
    if (o.max_tokens > 0 && tokens.size() > o.max_tokens) {
        tokens.resize(o.max_tokens);
    }
    const vkf::Model model(ctx, o.model, vkf::ModelOptions{.weights = o.weights});
    const vkf::ModelConfig& config = model.config();
    const std::uint32_t train = config.max_seq_len;
    std::vector<std::uint32_t> lengths = o.ctx.value_or(std::vector<std::uint32_t>{});
    if (lengths.empty()) {
        for (const std::uint32_t x : {1u, 2u, 4u, 8u, 16u}) {
            lengths.push_back(x * train);
        }
    }
    // A length given twice is computed once; the lengths longer than the text are skipped
    // (and named), as long as one fits: the default list goes to 16x the training length.
    std::vector<std::uint32_t> skipped;
    {
        std::vector<std::uint32_t> fitting;
        for (const std::uint32_t c : lengths) {
            if (std::find(fitting.begin(), fitting.end(), c) != fitting.end() ||
                std::find(skipped.begin(), skipped.end(), c) != skipped.end()) {
                continue;
            }
            (c > tokens.size() ? skipped : fitting).push_back(c);
        }
        if (fitting.empty()) {
            vkf::perplexity_windows(tokens.size(), *std::min_element(skipped.begin(), skipped.end()));  // throws
        }
        lengths = std::move(fitting);
    }
    if (!skipped.empty()) {
        fmt::print(stderr, "vkf-perplexity: skipped ctx {}: longer than the text's {} tokens\n",
                   fmt::join(skipped, ", "), tokens.size());
    }
    // Every length is checked before the first one runs for minutes.
    std::size_t total_tokens = 0;
    for (const std::uint32_t c : lengths) {
        total_tokens += vkf::perplexity_windows(tokens.size(), c).windows * c;
    }
    if (!o.quiet) {
        fmt::print(stderr, "vkf-perplexity: {} tokens of {}, {} {} layers hidden {}, {} weights, on {}\n",
                   tokens.size(), o.file, vkf::family_name(config.family), config.n_layer, config.hidden,
                   vkf::to_string(model.weight_format()), ctx.device_info().name);
    }

    vkf::app::ProgressLine line(!o.quiet);
    const auto start = std::chrono::steady_clock::now();
    std::size_t tokens_done = 0;
    std::vector<vkf::PerplexityResult> results;
    for (const std::uint32_t c : lengths) {
        // A window of c - 1 or more keys hides nothing in a c-token run: full attention, exactly,
        // without the ring a windowed cache would need beside it.
        const std::uint32_t window = vkf::app::run_window(o.window, config);
        vkf::PerplexityOptions options{.chunk = o.chunk,
                                       .kv_dtype = o.kv.dense,
                                       .kv_k_quant = o.kv.k_quant(),
                                       .kv_v_quant = o.kv.v_quant(),
                                       .attention_window = window + 1 >= c ? 0 : window};
        options.progress = [&](std::size_t done, std::size_t windows) {
            tokens_done += c;
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const double left = seconds * static_cast<double>(total_tokens - tokens_done) / tokens_done;
            line.update(static_cast<double>(tokens_done) / total_tokens,
                        fmt::format("ctx {}: window {} of {}, {:.0f}% of all, {:.0f} s left", c, done, windows,
                                    100.0 * tokens_done / total_tokens, left));
        };
        results.push_back(vkf::perplexity(model, tokens, c, options));
    }

    const double base = results.front().perplexity();
    if (o.json) {
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        for (const vkf::PerplexityResult& r : results) {
            rows.push_back({{"ctx", r.windows.ctx},
                            {"x_training_length", static_cast<double>(r.windows.ctx) / train},
                            {"windows", r.windows.windows},
                            {"scored_tokens", r.sum.tokens},
                            {"mean_nll", r.sum.mean()},
                            {"perplexity", r.perplexity()},
                            {"relative_to_first", r.perplexity() / base},
                            {"seconds", r.time.count()}});
        }
        const nlohmann::ordered_json json = {
            {"device", ctx.device_info()},
            {"model", {{"path", o.model}, {"family", vkf::family_name(config.family)}, {"training_length", train}}},
            {"weights", vkf::to_string(model.weight_format())},
            {"kv", o.kv.name()},
            {"window", vkf::app::run_window(o.window, config)},
            {"file", o.file},
            {"tokens", tokens.size()},
            {"windowing", "non-overlapping windows of ctx tokens, each scored on its second half (llama.cpp)"},
            {"results", rows},
            {"skipped_ctx", skipped}};
        fmt::print("{}\n", vkf::json_text(json));
    } else {
        fmt::print("perplexity of {} ({} tokens), training length {}:\n", o.file, tokens.size(), train);
        fmt::print("{:>7} {:>8} {:>8} {:>9} {:>11} {:>9} {:>9}\n", "ctx", "x train", "windows", "scored", "perplexity",
                   "vs first", "seconds");
        for (const vkf::PerplexityResult& r : results) {
            fmt::print("{:>7} {:>7.3g}x {:>8} {:>9} {:>11.4f} {:>9.4f} {:>9.1f}\n", r.windows.ctx,
                       static_cast<double>(r.windows.ctx) / train, r.windows.windows, r.sum.tokens, r.perplexity(),
                       r.perplexity() / base, r.time.count());
        }
        fmt::print("windows: non-overlapping, each scored on its second half (llama.cpp's definition)\n");
    }
    if (!o.plot.empty()) {
        write_plot(
            o.plot,
            fmt::format("perplexity of {} against context length", std::filesystem::path(o.file).filename().string()),
            results, train);
    }
    return vkf::app::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    vkf::app::CommandLine cli("vkf-perplexity", kAbout);
    Options options;
    declare_options(cli, options);
    return vkf::app::run_app(cli, argc, argv, [&] { return run(options); });
}
