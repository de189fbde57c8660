// The report of one prompt's run, shared by one device (apps/vkf_run.cpp), --devices
// (apps/run/split.cpp) and mpirun (apps/run/distributed.cpp), so that they print the same.

#include "apps/common/exit_codes.hpp"
#include "apps/common/stop_signals.hpp"
#include "apps/run/report.hpp"
#include "base/format.hpp"
#include "runtime/device_info_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace vkf::run_cli {

OneRun one_run(std::span<const std::uint32_t> prompt, const GenerationResult& result,
               const std::optional<app::StreamedText>& streamed, const PreparationStats& prepared, std::uint32_t window,
               std::uint32_t ctx) {
    return OneRun{.prompt = prompt,
                  .result = result,
                  .interrupted = result.stop == StopReason::Caller && app::stop_signal() != 0,
                  .streamed = streamed ? &*streamed : nullptr,
                  .prepared = prepared,
                  .window = window,
                  .ctx = ctx};
}

nlohmann::ordered_json one_run_json(const Options& o, const OneRun& run) {
    const GenerationResult& result = run.result;
    nlohmann::ordered_json json = nlohmann::ordered_json::object();
    json[std::string(run.device_key)] = run.device;
    json["model"] = run.model;
    json["sampling"] = sampling_json(o.sampling);
    json["prepare"] = prepare_json(run.prepared);
    json["prompt_ids"] = run.prompt;
    json["generated_ids"] = result.tokens;
    json["stop_reason"] = run.interrupted ? std::string_view{"interrupted"} : stop_reason_name(result.stop);
    json["prefill_seconds"] = result.prefill_time.count();
    json["decode_seconds"] = result.decode_time.count();
    json["prefill_tokens_per_second"] = result.prefill_tokens_per_second();
    json["decode_tokens_per_second"] = result.decode_tokens_per_second();
    json["kv"] = run.kv;
    json.update(run.after_kv);
    json["window"] = run.window;
    json["ctx"] = run.ctx;
    json.update(run.after_ctx);
    if (run.streamed) {
        json["prompt"] = *o.prompt_text;
        json["text"] = run.streamed->text();
    }
    if (run.check) {
        json["check"] = check_json(*run.check);
    }
    return json;
}

int print_one_run(const Options& o, const OneRun& run, const Model& model, const std::optional<std::string>& load_line,
                  const std::string& extra) {
    const GenerationResult& result = run.result;
    if (!run.streamed) {
        fmt::print("generated: {}\n", fmt::join(result.tokens, " "));
    }
    if (result.stop == StopReason::CacheFull) {
        fmt::print(
            "stopped after {} tokens: the {}-token KV cache is full (--ctx; --window W lets generation go "
            "on)\n",
            result.tokens.size(), run.ctx);
    } else if (run.interrupted) {
        fmt::print("stopped after {} tokens: interrupted (signal {})\n", result.tokens.size(), app::stop_signal());
    } else if (result.stop != StopReason::Length) {
        fmt::print("stopped after {} tokens: {}\n", result.tokens.size(), stop_reason_text(result.stop));
    }
    if (load_line) {
        fmt::print("{}\n", *load_line);
    }
    fmt::print("{}\n", prepare_line(run.prepared));
    fmt::print("prefill: {} tokens in {:.3f} s, {:.2f} tokens/s\n", run.prompt.size(), result.prefill_time.count(),
               result.prefill_tokens_per_second());
    fmt::print("decode:  {} tokens in {:.3f} s, {:.2f} tokens/s\n", result.tokens.size() - 1,
               result.decode_time.count(), result.decode_tokens_per_second());
    fmt::print("{}", extra);
    if (run.check && !print_check(*run.check, result.tokens.size(), model, o.check_tolerance)) {
        return app::kExitCheckFailed;
    }
    return app::kExitOk;
}

}  // namespace vkf::run_cli
