// Fuzzes vkf-bench result files (read_run, apps/bench/results.hpp), which `vkf-bench compare`
// reads from any machine. An accepted file must write back (run_json, json_text) to a
// document that reads back to the same run.

#include "apps/bench/results.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    fuzz::run_parser([&] {
        const bench::Run run = bench::read_run(parse_json(fuzz::as_text(data, size), "result.json"));
        const std::string text = json_text(bench::run_json(run));
        fuzz::check(bench::read_run(parse_json(text, "written result.json")) == run,
                    "run_json writes a file that reads back to the same run");
    });
    return 0;
}
