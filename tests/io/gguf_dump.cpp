// Prints what open_gguf reads from a GGUF file as JSON, for tests/io/gguf_compare.py to check
// against what llama.cpp's gguf-py wrote: usage gguf_dump FILE [TENSOR_DIR]. With TENSOR_DIR,
// tensor i's bytes are written to TENSOR_DIR/i.bin. A refused file prints the error and exits 1.

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "host/io/gguf.hpp"

namespace {

nlohmann::json value_json(const vkf::GgufValue& v) {
    switch (v.type) {
        case vkf::GgufValueType::Array: {
            nlohmann::json elements = nlohmann::json::array();
            for (const vkf::GgufValue& e : v.as_array()) {
                elements.push_back(value_json(e));
            }
            return elements;
        }
        case vkf::GgufValueType::String:
            return v.as_string();
        case vkf::GgufValueType::Bool:
            return v.as_bool();
        case vkf::GgufValueType::F32:
        case vkf::GgufValueType::F64:
            return v.as_double();
        case vkf::GgufValueType::I8:
        case vkf::GgufValueType::I16:
        case vkf::GgufValueType::I32:
        case vkf::GgufValueType::I64:
            return v.as_int64();
        default:
            return v.as_uint64();
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 && argc != 3) {
        std::fprintf(stderr, "usage: gguf_dump FILE [TENSOR_DIR]\n");
        return 2;
    }
    try {
        const vkf::GgufFile file = vkf::open_gguf(argv[1]);
        nlohmann::json out;
        out["version"] = file.version();
        out["alignment"] = file.alignment();
        out["data_offset"] = file.data_offset();
        out["metadata"] = nlohmann::json::array();
        for (const vkf::GgufKeyValue& kv : file.metadata()) {
            nlohmann::json entry{
                {"key", kv.key}, {"type", vkf::gguf_value_type_name(kv.value.type)}, {"value", value_json(kv.value)}};
            if (kv.value.is_array()) {
                entry["element_type"] = vkf::gguf_value_type_name(kv.value.element_type);
            }
            out["metadata"].push_back(entry);
        }
        out["tensors"] = nlohmann::json::array();
        for (std::size_t i = 0; i < file.tensors().size(); ++i) {
            const vkf::GgufTensorInfo& t = file.tensors()[i];
            out["tensors"].push_back({{"name", t.name},
                                      {"shape", t.shape()},
                                      {"type", vkf::ggml_type_name(t.type)},
                                      {"offset", t.offset},
                                      {"byte_size", t.byte_size}});
            if (argc == 3) {
                const auto bytes = file.read_raw(t);
                std::ofstream bin(std::string(argv[2]) + "/" + std::to_string(i) + ".bin", std::ios::binary);
                bin.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
                if (!bin) {
                    std::fprintf(stderr, "gguf_dump: cannot write tensor %zu\n", i);
                    return 2;
                }
            }
        }
        std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } catch (const vkf::Error& e) {
        std::printf("error: %s\n", e.what());
        return 1;
    }
    return 0;
}
