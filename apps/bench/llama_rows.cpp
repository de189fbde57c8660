#include "apps/bench/llama_rows.hpp"

#include "host/io/json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vkf::bench {

using json = nlohmann::ordered_json;

std::string test_label(const LlamaTest& t) {
    std::string label;
    if (t.n_prompt > 0 && t.n_gen == 0) {
        label = fmt::format("pp{}", t.n_prompt);
    } else if (t.n_gen > 0 && t.n_prompt == 0) {
        label = fmt::format("tg{}", t.n_gen);
    } else {
        label = fmt::format("pp{}+tg{}", t.n_prompt, t.n_gen);
    }
    if (t.n_depth > 0) {
        label += fmt::format(" @ d{}", t.n_depth);
    }
    if (t.sequences > 1) {
        label += fmt::format(" x{}", t.sequences);
    }
    return label;
}

std::vector<double> LlamaRow::samples_ts() const {
    // Every sequence's tokens count: a batch's aggregate rate.
    const double tokens = static_cast<double>(test.sequences) * (test.n_prompt + test.n_gen);
    std::vector<double> ts;
    for (const std::uint64_t ns : samples_ns) {
        ts.push_back(ns == 0 ? 0.0 : 1e9 * tokens / static_cast<double>(ns));
    }
    return ts;
}

namespace {

double mean(const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// llama-bench's stdev(): the sample standard deviation, 0 for fewer than two values.
double sample_stddev(const std::vector<double>& v) {
    if (v.size() <= 1) {
        return 0.0;
    }
    const double m = mean(v);
    double sum = 0.0;
    for (const double x : v) {
        sum += (x - m) * (x - m);
    }
    return std::sqrt(sum / static_cast<double>(v.size() - 1));
}

std::vector<double> as_doubles(const std::vector<std::uint64_t>& v) {
    return {v.begin(), v.end()};
}

// A finite number, else null (JSON has no NaN or infinity).
json finite_or_null(const std::optional<double>& v) {
    return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

}  // namespace

double LlamaRow::avg_ts() const {
    return mean(samples_ts());
}

double LlamaRow::stddev_ts() const {
    return sample_stddev(samples_ts());
}

std::optional<double> LlamaRow::bandwidth_fraction() const {
    // Only a row that only decodes reads the weights once per step and nothing else of note.
    if (test.n_prompt != 0 || test.n_gen == 0 || !bandwidth_gbps || *bandwidth_gbps <= 0.0 || samples_ns.empty()) {
        return std::nullopt;
    }
    const double steps_per_s = avg_ts() / test.sequences;
    return steps_per_s * static_cast<double>(bytes_read_per_step) * 1e-9 / *bandwidth_gbps;
}

const std::vector<std::string>& llama_bench_fields() {
    static const std::vector<std::string> fields = {"build_commit",   "build_number",
                                                    "cpu_info",       "gpu_info",
                                                    "backends",       "model_filename",
                                                    "model_type",     "model_size",
                                                    "model_n_params", "n_batch",
                                                    "n_ubatch",       "n_threads",
                                                    "cpu_mask",       "cpu_strict",
                                                    "poll",           "type_k",
                                                    "type_v",         "n_gpu_layers",
                                                    "n_cpu_moe",      "split_mode",
                                                    "main_gpu",       "no_kv_offload",
                                                    "flash_attn",     "devices",
                                                    "tensor_split",   "tensor_buft_overrides",
                                                    "load_mode",      "lazy_mode",
                                                    "embeddings",     "no_op_offload",
                                                    "no_host",        "fit_target",
                                                    "fit_min_ctx",    "n_prompt",
                                                    "n_gen",          "n_depth",
                                                    "test_time",      "avg_ns",
                                                    "stddev_ns",      "avg_ts",
                                                    "stddev_ts"};
    return fields;
}

namespace {

// llama-bench's fields of the row, typed as its JSON writer types them.
json llama_fields(const LlamaRow& r) {
    const std::vector<double> ns = as_doubles(r.samples_ns);
    json j;
    j["build_commit"] = r.build_commit;
    j["build_number"] = r.build_number;
    j["cpu_info"] = r.cpu_info;
    j["gpu_info"] = r.gpu_info;
    j["backends"] = r.backends;
    j["model_filename"] = r.model_filename;
    j["model_type"] = r.model_type;
    j["model_size"] = r.model_size;
    j["model_n_params"] = r.model_n_params;
    j["n_batch"] = r.n_batch;
    j["n_ubatch"] = r.n_ubatch;
    j["n_threads"] = r.n_threads;
    j["cpu_mask"] = "0x0";
    j["cpu_strict"] = false;
    j["poll"] = 50;
    j["type_k"] = r.type_k;
    j["type_v"] = r.type_v;
    j["n_gpu_layers"] = r.n_gpu_layers;
    j["n_cpu_moe"] = 0;
    j["split_mode"] = "layer";
    j["main_gpu"] = r.main_gpu;
    j["no_kv_offload"] = false;
    j["flash_attn"] = r.flash_attn;
    j["devices"] = r.device_name.empty() ? std::string("auto") : r.device_name;
    j["tensor_split"] = "0.00";
    j["tensor_buft_overrides"] = "none";
    j["load_mode"] = "auto";
    j["lazy_mode"] = "auto";
    j["embeddings"] = false;
    j["no_op_offload"] = 0;
    j["no_host"] = false;
    j["fit_target"] = 0;
    j["fit_min_ctx"] = 0;
    j["n_prompt"] = r.test.n_prompt;
    j["n_gen"] = r.test.n_gen;
    j["n_depth"] = r.test.n_depth;
    j["test_time"] = r.test_time;
    // Truncated, as llama-bench's integer avg() and stdev() of samples_ns.
    j["avg_ns"] = r.samples_ns.empty() ? std::uint64_t{0}
                                       : std::accumulate(r.samples_ns.begin(), r.samples_ns.end(), std::uint64_t{0}) /
                                             r.samples_ns.size();
    j["stddev_ns"] = static_cast<std::uint64_t>(sample_stddev(ns));
    j["avg_ts"] = r.avg_ts();
    j["stddev_ts"] = r.stddev_ts();
    return j;
}

json vkformer_fields(const LlamaRow& r) {
    json j;
    j["vkf_version"] = r.vkformer_version;
    j["vkf_device"] = r.device_name;
    j["vkf_driver_id"] = r.driver_id;
    j["vkf_driver_name"] = r.driver_name;
    j["vkf_driver_info"] = r.driver_info;
    j["vkf_driver_version"] = r.driver_version;
    j["vkf_api_version"] = r.api_version;
    j["vkf_weights"] = r.weights;
    j["vkf_sequences"] = r.test.sequences;
    j["vkf_sustained"] = r.sustained;
    j["vkf_bytes_read_per_step"] = r.bytes_read_per_step;
    j["vkf_bandwidth_gbps"] = finite_or_null(r.bandwidth_gbps);
    j["vkf_bandwidth_fraction"] = finite_or_null(r.bandwidth_fraction());
    j["vkf_check_tokens"] = r.check_tokens;
    j["vkf_check_max_rel"] = finite_or_null(r.check_max_rel);
    j["vkf_batched_max_rel"] = finite_or_null(r.batched_max_rel);
    j["vkf_check_tolerance"] = r.check_tolerance;
    j["vkf_status"] = r.failed ? "failed" : "ok";
    j["vkf_message"] = r.message;
    j["vkf_effective_limits"] = r.effective_limits;
    return j;
}

std::string csv_cell(const json& v) {
    std::string text = v.is_string() ? v.get<std::string>() : v.is_boolean() ? (v.get<bool>() ? "1" : "0") : v.dump();
    std::string escaped = "\"";
    for (const char c : text) {
        escaped += c == '"' ? std::string("\"\"") : std::string(1, c);
    }
    return escaped + "\"";
}

std::string size_label(std::uint64_t bytes) {
    const double mib = static_cast<double>(bytes) / 1024.0 / 1024.0;
    return bytes < 1024ull * 1024 * 1024 ? fmt::format("{:.2f} MiB", mib) : fmt::format("{:.2f} GiB", mib / 1024.0);
}

std::string params_label(std::uint64_t n) {
    return n < 1000ull * 1000 * 1000 ? fmt::format("{:.2f} M", static_cast<double>(n) / 1e6)
                                     : fmt::format("{:.2f} B", static_cast<double>(n) / 1e9);
}

// llama-bench's markdown table: its columns for a GPU backend, then vkformer's check and
// bandwidth fraction.
// The characters of UTF-8 text ("±" is one): what fmt pads to a width.
std::size_t code_points(std::string_view text) {
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::vector<std::string> markdown_values(const LlamaRow& r) {
    const std::optional<double> bw = r.bandwidth_fraction();
    std::string err = r.check_max_rel ? fmt::format("{:.1e}", *r.check_max_rel) : "-";
    if (r.batched_max_rel) {
        err += fmt::format(" ({:.0e})", *r.batched_max_rel);
    }
    return {r.model_type,
            size_label(r.model_size),
            params_label(r.model_n_params),
            r.backends,
            fmt::to_string(r.n_gpu_layers),
            test_label(r.test),
            r.failed ? std::string("FAILED check") : fmt::format("{:.2f} ± {:.2f}", r.avg_ts(), r.stddev_ts()),
            err,
            bw ? fmt::format("{:.1f}", *bw * 100.0) : "-"};
}

// llama-bench's markdown table: its columns for a GPU backend (its widths, wider where a value
// needs it), then vkformer's check and bandwidth fraction.
std::string markdown(const std::vector<LlamaRow>& rows) {
    struct Column {
        std::string title;
        std::size_t width;
        bool left;  // llama-bench's negative widths
    };
    std::vector<Column> columns = {{"model", 30, true},   {"size", 10, false},        {"params", 10, false},
                                   {"backend", 10, true}, {"ngl", 3, false},          {"test", 15, false},
                                   {"t/s", 20, false},    {"max rel err", 11, false}, {"% bw", 6, false}};
    std::vector<std::vector<std::string>> table;
    for (const LlamaRow& r : rows) {
        table.push_back(markdown_values(r));
        for (std::size_t i = 0; i < columns.size(); ++i) {
            columns[i].width = std::max(columns[i].width, code_points(table.back()[i]));
        }
    }
    const auto line = [&](const std::vector<std::string>& values) {
        std::string text = "|";
        for (std::size_t i = 0; i < columns.size(); ++i) {
            text += columns[i].left ? fmt::format(" {:<{}} |", values[i], columns[i].width)
                                    : fmt::format(" {:>{}} |", values[i], columns[i].width);
        }
        return text + "\n";
    };
    std::vector<std::string> titles, rules;
    for (const Column& c : columns) {
        titles.push_back(c.title);
        rules.push_back(std::string(c.width - 1, '-') + (c.left ? "-" : ":"));
    }
    std::string out = line(titles) + line(rules);
    for (const std::vector<std::string>& values : table) {
        out += line(values);
    }
    if (!rows.empty()) {
        out += fmt::format("\nbuild: vkformer {} ({})\n", rows.front().vkformer_version, rows.front().build_commit);
    }
    return out;
}

}  // namespace

json row_json(const LlamaRow& row) {
    json j = llama_fields(row);
    j["samples_ns"] = row.samples_ns;
    j["samples_ts"] = row.samples_ts();
    const json own = vkformer_fields(row);
    for (const auto& [key, value] : own.items()) {
        j[key] = value;
    }
    return j;
}

std::string llama_output(const std::vector<LlamaRow>& rows, LlamaFormat format) {
    switch (format) {
        case LlamaFormat::Json: {
            json all = json::array();
            for (const LlamaRow& r : rows) {
                all.push_back(row_json(r));
            }
            return json_text(all) + "\n";
        }
        case LlamaFormat::Jsonl: {
            std::string out;
            for (const LlamaRow& r : rows) {
                out += json_text(row_json(r), JsonStyle::Compact) + "\n";
            }
            return out;
        }
        case LlamaFormat::Csv: {
            std::vector<std::string> header = llama_bench_fields();
            const json own = vkformer_fields(LlamaRow{});
            for (const auto& [key, value] : own.items()) {
                header.push_back(key);
            }
            std::string out = fmt::format("{}\n", fmt::join(header, ","));
            for (const LlamaRow& r : rows) {
                const json j = row_json(r);
                std::vector<std::string> cells;
                for (const std::string& key : header) {
                    cells.push_back(csv_cell(j.at(key)));
                }
                out += fmt::format("{}\n", fmt::join(cells, ","));
            }
            return out;
        }
        case LlamaFormat::Md:
            return markdown(rows);
    }
    return {};
}

}  // namespace vkf::bench
