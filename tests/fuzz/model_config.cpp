// Fuzzes config.json (parse_model_config, host/spec/model_config.hpp) for both families,
// BLOOM and MPT. An accepted configuration must pass validate, write back as config.json
// (hf_config_json) and parse back to itself, and list the tensors its checkpoint must hold
// (expected_tensors, which every checkpoint check starts from).

#include "host/spec/model_config.hpp"
#include "host/spec/model_tensors.hpp"
#include "tests/fuzz/fuzz_support.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace vkf;
    fuzz::run_parser([&] {
        const ModelConfig config = parse_model_config(fuzz::as_text(data, size), "config.json");
        validate(config);  // parse_model_config validated it: throwing here is a finding
        for (const DType dtype : {DType::F32, DType::F16, DType::BF16}) {
            const std::string text = hf_config_json(config, dtype);
            fuzz::check(parse_model_config(text, "written config.json") == config,
                        "hf_config_json parses back to the same configuration");
        }
        // FINDING (reported, not fixed here: model_config.cpp is being reworked): validate
        // accepts any n_layer up to 2^32 - 1, and expected_tensors then lists 10 tensors a
        // layer before any checkpoint is read: a 150-byte config.json with n_layer 310104
        // takes 10 s, one with 4e9 layers exhausts memory (vkf-run, vkf-quantize). Until
        // validate bounds it, the list is only built for plausible depths.
        if (config.n_layer <= 1024) {
            const std::vector<ExpectedTensor> tensors = expected_tensors(config);
            fuzz::check(!tensors.empty(), "a model has tensors");
        }
    });
    return 0;
}
