// Fuzzes config.json (parse_model_config, host/spec/model_config.hpp) for every decoder
// family (BLOOM, MPT, Falcon, Baichuan, Jais). An accepted configuration must pass validate, write back as config.json
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
        // The fuzzer's finding (a 150-byte config.json with n_layer 310104 took 10 s here, 4e9
        // layers exhausted memory) is fixed in validate: ModelLimits bounds every size.
        fuzz::check(config.n_layer <= ModelLimits::max_layers, "validate bounds the depth");
        const std::vector<ExpectedTensor> tensors = expected_tensors(config);
        fuzz::check(!tensors.empty(), "a model has tensors");
    });
    return 0;
}
