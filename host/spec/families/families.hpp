#pragma once
// The config.json of each ALiBi family: parsed into a ModelConfig (every key the family's
// Hugging Face modeling code reads is honoured or refused by name) and written back as
// transformers would write it (hf_config_json). One file per family; model_config.cpp
// dispatches on model_type.

#include "host/io/json.hpp"
#include "host/spec/model_config.hpp"

#include <nlohmann/json.hpp>

#include <string_view>

namespace vkf::families {

// The sizes, the family's own keys and its refusals; bos/eos ids and validate() are the
// caller's.
ModelConfig parse_bloom(const JsonValue& root);
ModelConfig parse_mpt(const JsonValue& root);
ModelConfig parse_falcon(const JsonValue& root);
ModelConfig parse_baichuan(const JsonValue& root);
ModelConfig parse_jais(const JsonValue& root);

// config.json without the token ids; torch_dtype is "float32", "float16" or "bfloat16".
nlohmann::json bloom_json(const ModelConfig& config, std::string_view torch_dtype);
nlohmann::json mpt_json(const ModelConfig& config, std::string_view torch_dtype);
nlohmann::json falcon_json(const ModelConfig& config, std::string_view torch_dtype);
nlohmann::json baichuan_json(const ModelConfig& config, std::string_view torch_dtype);
nlohmann::json jais_json(const ModelConfig& config, std::string_view torch_dtype);

}  // namespace vkf::families
