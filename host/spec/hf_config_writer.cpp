// hf_config_json (model_config.hpp): the config.json Hugging Face writes for a model of a
// given shape, each family's keys written by its FamilySpec (host/spec/families/).

#include "host/spec/family_spec.hpp"
#include "host/spec/model_config.hpp"

#include "base/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vkf {

std::string_view torch_dtype_name(DType dtype) {
    switch (dtype) {
        case DType::F32:
            return "float32";
        case DType::F16:
            return "float16";
        case DType::BF16:
            return "bfloat16";
        default:
            throw Error(fmt::format("checkpoint writer: dtype {} is not one of F32, F16, BF16", dtype_name(dtype)));
    }
}

std::string hf_config_json(const ModelConfig& config, DType dtype) {
    validate(config);
    const std::string_view torch = torch_dtype_name(dtype);
    // nlohmann::json keeps object keys sorted, as transformers writes config.json.
    nlohmann::json json = family_spec(config.family).write(config, torch);
    if (config.bos_token_id) {
        json["bos_token_id"] = *config.bos_token_id;
    }
    if (config.eos_token_ids.size() == 1) {
        json["eos_token_id"] = config.eos_token_ids[0];
    } else if (!config.eos_token_ids.empty()) {
        json["eos_token_id"] = config.eos_token_ids;
    }
    return json.dump(2) + "\n";
}

}  // namespace vkf
