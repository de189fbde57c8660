// Writes the seed inputs of every fuzz target, with the project's own writers where there is
// one: usage vkf_fuzz_seeds OUT_DIR REPO_ROOT. scripts/fuzz.sh --make-corpus runs it and
// keeps, per target, the inputs that add coverage (libFuzzer -merge=1) in
// tests/fuzz/corpus/<target>/. Valid inputs first, then near-valid ones that fail one check.

#include "apps/bench/results.hpp"
#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/io/npy.hpp"
#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"
#include "host/io/text_file.hpp"
#include "host/quant/quantized_checkpoint.hpp"
#include "host/spec/family_spec.hpp"
#include "host/spec/model_config.hpp"
#include "host/spec/random_weights.hpp"
#include "tests/fuzz/sequence_state_seeds.hpp"
#include "tests/io/gguf_test_writer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace vkf;

fs::path g_out;

void put(const std::string& target, const std::string& name, const std::string& bytes) {
    fs::create_directories(g_out / target);
    write_text_file(g_out / target / name, bytes);
}

std::string bytes_of(const fs::path& path) {
    return read_text_file(path);
}

ModelConfig config(ModelFamily family, std::uint32_t vocab, std::uint32_t hidden, std::uint32_t layers,
                   std::uint32_t heads) {
    ModelConfig c{.family = family, .vocab_size = vocab, .hidden = hidden, .n_layer = layers, .n_head = heads};
    c.n_kv_head = heads;
    c.head_dim = hidden / heads;
    c.ffn_hidden = 4 * hidden;
    // The family's usual settings, as vkf-make-checkpoint --family writes them (MPT: no_bias).
    if (const auto configure = family_spec(family).writer.configure) {
        configure(c, CheckpointOptionValues{});
    }
    return c;
}

// The configurations tests/fuzz/quantized_checkpoint.cpp checks against.
ModelConfig quant_bloom() {
    return config(ModelFamily::Bloom, 8, 32, 1, 2);
}
ModelConfig quant_mpt() {
    ModelConfig c = config(ModelFamily::Mpt, 8, 32, 1, 2);
    c.tie_word_embeddings = false;
    return c;
}

// A checkpoint written into a scratch directory; returns the directory.
fs::path checkpoint(const std::string& name, const ModelConfig& c, DType dtype, int shards = 1) {
    const fs::path dir = g_out / ".scratch" / name;
    write_random_checkpoint(dir, c, 7, dtype, shards);
    return dir;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
}

// --- gguf -----------------------------------------------------------------------------------
// Besides these, the corpus keeps files written by llama.cpp's gguf-py (gguf-py-*.gguf).
void gguf_seeds() {
    const std::string t = "gguf";
    using test::GgufBytes;
    GgufBytes good;
    good.header(2, 3).kv_str("general.architecture", "bloom").kv_u32("bloom.block_count", 1);
    good.str("tokens").u32(9).u32(8).u64(2).str("a").str("b");
    good.tensor("token_embd.weight", {32, 2}, 1, 0).tensor("blk.0.attn_qkv.weight", {32, 1}, 8, 128).pad(32);
    good.text(std::string(128 + 34, '\x01'));
    put(t, "writer-good.gguf", good.bytes());
    GgufBytes overlap;
    overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad(32).text(std::string(64, '\0'));
    put(t, "overlap.gguf", overlap.bytes());
    GgufBytes hidden;  // an empty tensor between two overlapping ones once hid the overlap
    hidden.header(3, 0).tensor("a", {16}, 0, 0).tensor("empty", {0}, 0, 32).tensor("b", {4}, 0, 32).pad(32);
    put(t, "regression-hidden-overlap.gguf", hidden.text(std::string(64, '\0')).bytes());
    GgufBytes nested;
    nested.header(0, 1).str("k").u32(9).u32(9).u64(0);
    put(t, "nested-array.gguf", nested.bytes());
    GgufBytes huge;
    huge.header(0, 1).str("k").u32(9).u32(4).u64(std::uint64_t{1} << 40).u32(1);
    put(t, "huge-array.gguf", huge.bytes());
    GgufBytes unknown;
    unknown.header(1, 0).tensor("t", {4}, 4, 0).pad(32).text(std::string(16, '\0'));
    put(t, "unknown-type.gguf", unknown.bytes());
}

// --- safetensors --------------------------------------------------------------------------

RawTensorSource raw(std::string name, DType dtype, std::vector<std::size_t> shape) {
    return {.name = std::move(name), .dtype = dtype, .shape = std::move(shape), .bytes = [](std::span<std::byte> out) {
                for (std::size_t i = 0; i < out.size(); ++i) {
                    out[i] = static_cast<std::byte>(i * 29 + 3);
                }
            }};
}

// A safetensors file with `header` (JSON) and `data` bytes, for the near-valid seeds.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
    std::string out(8, '\0');
    const std::uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);  // little-endian hosts only, as the project
    return out + header + data;
}

void safetensors_seeds() {
    const std::string t = "safetensors";
    const ModelConfig micro = config(ModelFamily::Bloom, 8, 4, 1, 2);
    put(t, "bloom-micro-f16.safetensors", bytes_of(checkpoint("st-f16", micro, DType::F16) / "model.safetensors"));
    put(t, "bloom-micro-bf16.safetensors", bytes_of(checkpoint("st-bf16", micro, DType::BF16) / "model.safetensors"));
    put(t, "mpt-micro-f32.safetensors",
        bytes_of(checkpoint("st-f32", config(ModelFamily::Mpt, 4, 4, 1, 1), DType::F32) / "model.safetensors"));
    const fs::path scratch = g_out / ".scratch";
    std::vector<RawTensorSource> every;
    for (const DType d :
         {DType::F32, DType::F16, DType::BF16, DType::F64, DType::F8_E4M3, DType::F8_E5M2, DType::I8, DType::U8,
          DType::I16, DType::U16, DType::I32, DType::U32, DType::I64, DType::U64, DType::Bool}) {
        every.push_back(raw(std::string("t_") + std::string(dtype_name(d)), d, {2, 1}));
    }
    every.push_back(raw("scalar", DType::F32, {}));
    every.push_back(raw("empty", DType::F16, {0, 4}));
    write_safetensors_file(scratch / "every.safetensors", every, {{"format", "pt"}, {"note", "every dtype"}});
    put(t, "every-dtype.safetensors", bytes_of(scratch / "every.safetensors"));
    // Near-valid: one check fails in each.
    const std::string data(8, '\x3c');
    put(t, "hole.safetensors", safetensors_bytes(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}})", data));
    put(t, "overlap.safetensors",
        safetensors_bytes(R"({"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})",
                          data));
    put(t, "size-mismatch.safetensors",
        safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data));
    put(t, "beyond-end.safetensors",
        safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data));
    put(t, "bad-metadata.safetensors",
        safetensors_bytes(R"({"__metadata__":{"format":1},"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})",
                          data));
    put(t, "unknown-dtype.safetensors",
        safetensors_bytes(R"({"a":{"dtype":"Q4","shape":[8],"data_offsets":[0,8]}})", data));
    std::string huge = safetensors_bytes("{}", "");
    huge[5] = '\x7f';
    put(t, "absurd-header-length.safetensors", huge);
}

// --- sharded index ------------------------------------------------------------------------

void index_seeds() {
    const std::string t = "checkpoint_index";
    // Names of the shards tests/fuzz/checkpoint_index.cpp writes.
    const std::string one = "model-00001-of-00002.safetensors", two = "model-00002-of-00002.safetensors";
    put(t, "all-shards.json",
        R"({"metadata": {"total_size": 55}, "weight_map": {"transformer.word_embeddings.weight": ")" + one +
            R"(", "transformer.h.0.bias": ")" + one + R"(", "lm_head.weight": ")" + one + R"(", "h.1.weight": ")" +
            two + R"(", "transformer.ln_f.weight": ")" + two + R"("}})");
    put(t, "nested-shard.json",
        R"({"weight_map": {"scalar": "sub/extra.safetensors", "empty": "sub/extra.safetensors"}})");
    put(t, "other-spelling.json", R"({"weight_map": {"word_embeddings.weight": ")" + one + R"("}})");
    put(t, "escape.json", R"({"weight_map": {"scalar": "../checkpoint/sub/extra.safetensors"}})");
    put(t, "absolute.json", R"({"weight_map": {"scalar": "/etc/passwd"}})");
    put(t, "missing-shard.json", R"({"weight_map": {"a": "model-00003-of-00003.safetensors"}})");
    put(t, "not-a-file.json", R"({"weight_map": {"a": "sub"}})");
    put(t, "no-weight-map.json", R"({"metadata": {"total_size": 0}})");
    // What the project's writer puts in an index (names not in the fuzzer's shards).
    const fs::path sharded = checkpoint("index", config(ModelFamily::Bloom, 8, 4, 1, 2), DType::F16, 2);
    put(t, "writer-index.json", bytes_of(sharded / "model.safetensors.index.json"));
}

// --- config.json --------------------------------------------------------------------------

void config_seeds(const fs::path& repo) {
    const std::string t = "model_config";
    ModelConfig bloom = config(ModelFamily::Bloom, 512, 64, 2, 4);
    put(t, "bloom-tiny.json", hf_config_json(bloom, DType::F16));
    ModelConfig bloom560 = config(ModelFamily::Bloom, 250880, 1024, 24, 16);
    bloom560.bos_token_id = 1;
    bloom560.eos_token_ids = {2};
    put(t, "bloom-560m.json", hf_config_json(bloom560, DType::F16));
    ModelConfig mpt = config(ModelFamily::Mpt, 512, 96, 2, 6);
    put(t, "mpt-tiny.json", hf_config_json(mpt, DType::F32));
    ModelConfig mpt7b = config(ModelFamily::Mpt, 50432, 4096, 32, 32);
    mpt7b.max_seq_len = 2048;
    mpt7b.eos_token_ids = {0, 50278};
    put(t, "mpt-7b.json", hf_config_json(mpt7b, DType::BF16));
    ModelConfig mpt_clip = config(ModelFamily::Mpt, 100, 32, 1, 4);
    mpt_clip.clip_qkv = 6.0;
    mpt_clip.alibi_bias_max = 16.0;
    mpt_clip.no_bias = false;
    mpt_clip.tie_word_embeddings = false;
    mpt_clip.ffn_hidden = 3 * 32;
    put(t, "mpt-clip-untied.json", hf_config_json(mpt_clip, DType::F16));
    put(t, "kjv-bloom.json", bytes_of(repo / "models" / "kjv-bloom" / "config.json"));
    // Aliases and optional settings the parser also reads.
    put(t, "bloom-aliases.json",
        R"({"model_type": "bloom", "vocab_size": 16, "n_embed": 8, "hidden_size": 8, "num_hidden_layers": 1,)"
        R"( "num_attention_heads": 2, "layer_norm_epsilon": 1e-5, "seq_length": 64, "n_inner": null,)"
        R"( "apply_residual_connection_post_layernorm": false, "tie_word_embeddings": true,)"
        R"( "bos_token_id": 1, "eos_token_id": [2, 3]})");
    put(t, "mpt-settings.json",
        R"({"model_type": "mpt", "vocab_size": 16, "d_model": 8, "n_layers": 1, "n_heads": 2, "max_seq_len": 64,)"
        R"( "expansion_ratio": 2.5, "no_bias": true, "norm_type": "low_precision_layernorm", "logit_scale": null,)"
        R"( "attn_config": {"alibi": true, "alibi_bias_max": 8, "clip_qkv": null, "attn_type": "multihead_attention",)"
        R"( "qk_ln": false, "softmax_scale": null, "prefix_lm": false, "rope": false, "sliding_window_size": -1},)"
        R"( "ffn_config": {"ffn_type": "mptmlp", "ffn_act_fn": {"name": "gelu", "approximate": "none"},)"
        R"( "ffn_hidden_size": 20}, "eos_token_id": 0})");
    // Near-valid: each refused for one reason.
    put(t, "mpt-no-alibi.json",
        R"({"model_type": "mpt", "vocab_size": 16, "d_model": 8, "n_layers": 1, "n_heads": 2,)"
        R"( "attn_config": {"alibi": false}})");
    put(t, "bloom-not-divisible.json",
        R"({"model_type": "bloom", "vocab_size": 16, "hidden_size": 9, "n_layer": 1, "n_head": 2})");
    put(t, "eos-beyond-vocab.json",
        R"({"model_type": "bloom", "vocab_size": 16, "hidden_size": 8, "n_layer": 1, "n_head": 2, "eos_token_id": 16})");
    put(t, "falcon.json", R"({"model_type": "falcon", "vocab_size": 65024, "hidden_size": 4544, "alibi": false})");
}

// --- .npy -----------------------------------------------------------------------------------

void npy_seeds() {
    const std::string t = "npy";
    const fs::path scratch = g_out / ".scratch";
    struct Case {
        const char* name;
        DType dtype;
        std::vector<std::size_t> shape;
    };
    const std::vector<Case> cases = {{"f32-2x3.npy", DType::F32, {2, 3}},
                                     {"f16-4.npy", DType::F16, {4}},
                                     {"i32-scalar.npy", DType::I32, {}},
                                     {"u32-0x5.npy", DType::U32, {0, 5}},
                                     {"i64-3x1x2.npy", DType::I64, {3, 1, 2}}};
    for (const Case& c : cases) {
        std::size_t count = 1;
        for (const std::size_t d : c.shape) {
            count *= d;
        }
        std::vector<std::byte> data(count * element_size(c.dtype));
        for (std::size_t i = 0; i < data.size(); ++i) {
            data[i] = static_cast<std::byte>(i * 13 + 1);
        }
        write_npy(scratch / c.name, c.dtype, c.shape, data);
        put(t, c.name, bytes_of(scratch / c.name));
    }
    const std::string f32 = bytes_of(scratch / "f32-2x3.npy");
    // Version 2.0: a 4-byte header length.
    std::string v2 = f32.substr(0, 6) + std::string("\x02\x00", 2);
    const std::uint32_t length = static_cast<std::uint8_t>(f32[8]) | (static_cast<std::uint8_t>(f32[9]) << 8);
    v2.push_back(static_cast<char>(length & 0xff));
    v2.push_back(static_cast<char>(length >> 8));
    v2 += std::string(2, '\0') + f32.substr(10);
    put(t, "f32-v2.npy", v2);
    std::string fortran = f32, big = f32, trailing = f32 + "xx", python2 = f32;
    replace_all(fortran, "False", "True ");
    replace_all(big, "<f4", ">f4");
    replace_all(python2, "(2, 3)", "(2L, 3)");
    put(t, "fortran.npy", fortran);
    put(t, "big-endian.npy", big);
    put(t, "trailing-bytes.npy", trailing);
    put(t, "python2-long.npy", python2);
    put(t, "truncated.npy", f32.substr(0, f32.size() - 5));
}

// --- tokenizer.json -----------------------------------------------------------------------

void tokenizer_seeds(const fs::path& repo) {
    const std::string t = "tokenizer";
    std::vector<fs::path> fixtures;
    for (const auto& entry : fs::directory_iterator(repo / "tests" / "text" / "data")) {
        if (entry.path().extension() == ".json") {
            fixtures.push_back(entry.path());
        }
    }
    std::sort(fixtures.begin(), fixtures.end());
    for (const fs::path& f : fixtures) {
        put(t, f.filename().string(), bytes_of(f));
    }
    // The document, a NUL and a text to encode (tests/fuzz/tokenizer.cpp).
    put(t, "bloom-style-with-text.json",
        bytes_of(repo / "tests/text/data/bloom_style.json") + std::string(1, '\0') +
            "And God said, Let there be light: and there was light. \xe2\x80\x94 \xf0\x9f\x98\x80 <s>\n");
    put(t, "byte-bpe-with-text.json",
        bytes_of(repo / "tests/text/data/byte_bpe.json") + std::string(1, '\0') + "lowest newer wider\t 123");
    put(t, "bert-wordpiece-with-text.json",
        bytes_of(repo / "tests/text/data/bert_wordpiece.json") + std::string(1, '\0') +
            "[CLS] Unaffable CAF\xc3\x89S\x0b\xe4\xb8\xad\xe5\x9b\xbd, don't [MASK]! " + std::string(101, 'a'));
}

// --- quantized checkpoints ----------------------------------------------------------------

constexpr const char* kShardDelimiter = "\n--shard--\n";  // tests/fuzz/quantized_checkpoint.cpp

void quant_seeds() {
    const std::string t = "quantized_checkpoint";
    for (const auto& [name, c] : {std::pair{"bloom", quant_bloom()}, std::pair{"mpt", quant_mpt()}}) {
        const fs::path dense = checkpoint(std::string("q-") + name, c, DType::F16);
        put(t, std::string(name) + "-f16.safetensors", bytes_of(dense / "model.safetensors"));
        for (const QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0}) {
            const fs::path out = g_out / ".scratch" / (std::string("q-") + name + "-" + to_string(f));
            write_quantized_checkpoint(dense, out, f);
            put(t, std::string(name) + "-" + to_string(f) + ".safetensors", bytes_of(out / "model.safetensors"));
        }
    }
    // Two shards, as the target splits its input.
    const fs::path sharded = checkpoint("q-sharded", quant_bloom(), DType::F16, 2);
    const std::string one = bytes_of(sharded / "model-00001-of-00002.safetensors");
    const std::string two = bytes_of(sharded / "model-00002-of-00002.safetensors");
    put(t, "bloom-f16-two-shards.bin", one + kShardDelimiter + two);
    // Shards that disagree: one quantized, one not.
    const std::string q8 = bytes_of(g_out / ".scratch" / "q-bloom-q8_0" / "model.safetensors");
    put(t, "disagreeing-shards.bin", q8 + kShardDelimiter + two);
    // Metadata a reader must refuse.
    std::string version = q8, format = q8;
    replace_all(version, R"("vkformer.quantization_version":"1")", R"("vkformer.quantization_version":"9")");
    replace_all(format, R"("vkformer.quantization":"q8_0")", R"("vkformer.quantization":"q3_k")");
    put(t, "unknown-version.safetensors", version);
    put(t, "unknown-format.safetensors", format);
}

// --- pipeline cache -----------------------------------------------------------------------

std::uint64_t fnv1a(const std::string& bytes) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : bytes) {
        h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    }
    return h;
}

template <class T>
void append(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// A file as PipelineCache::save writes it (runtime/pipeline_cache.cpp: magic, payload size,
// FNV-1a, vendor, device, driver version, pad, device UUID, payload) for the device
// tests/fuzz/pipeline_cache.cpp checks against, with a driver header and `extra` bytes.
std::string cache_file(std::uint8_t uuid_base, const std::string& extra) {
    std::string payload;
    append<std::uint32_t>(payload, 32);  // headerSize
    append<std::uint32_t>(payload, 1);   // VK_PIPELINE_CACHE_HEADER_VERSION_ONE
    append<std::uint32_t>(payload, 0x10005);
    append<std::uint32_t>(payload, 0);
    for (std::uint8_t i = 0; i < 16; ++i) {
        payload.push_back(static_cast<char>(0xa0 + i));
    }
    payload += extra;
    std::string file = "VKFPIPE1";
    append<std::uint64_t>(file, payload.size());
    append<std::uint64_t>(file, fnv1a(payload));
    append<std::uint32_t>(file, 0x10005);
    append<std::uint32_t>(file, 0);
    append<std::uint32_t>(file, 0x5803000);
    append<std::uint32_t>(file, 0);
    for (std::uint8_t i = 0; i < 16; ++i) {
        file.push_back(static_cast<char>(uuid_base + i));
    }
    return file + payload;
}

void pipeline_cache_seeds() {
    const std::string t = "pipeline_cache";
    put(t, "valid.bin", cache_file(0x10, std::string("driver blob \x01\x02\x03\x04", 16)));
    put(t, "valid-header-only.bin", cache_file(0x10, ""));
    put(t, "foreign-device.bin", cache_file(0x20, "blob"));
    const std::string valid = cache_file(0x10, "0123456789");
    put(t, "truncated.bin", valid.substr(0, valid.size() - 3));
    std::string flipped = valid;
    flipped.back() ^= 0x5a;
    put(t, "checksum.bin", flipped);
    put(t, "short.bin", "VKFPIPE1");
}

// --- environment values -------------------------------------------------------------------

void environment_seeds() {
    const std::vector<std::string> limits = {
        "phone",
        "shared_memory=16K,workgroup_invocations=64,storage_buffer_range=32M,no_fp16_arithmetic",
        "push_constants=128,workgroup_count=65535,storage_buffers=8,compute_units=4",
        "no_fp16_storage,no_subgroup_ops,no_subgroup_size_control,no_int64,no_integer_dot",
        "device_heap=2G,host_heap=512m,phone",
        "shared_memory=0",
        "storage_buffer_range=18446744073709551615",
        "workgroup_invocations=4294967296",
        "phone=1,,",
        "bogus",
        "spec_minimum",
        "spec_minimum,storage_buffers=8,workgroup_size=64x32x1",
        "workgroup_size=1x2,workgroup_size=7"};
    for (std::size_t i = 0; i < limits.size(); ++i) {
        put("limits", "spec-" + std::to_string(i), limits[i]);
    }
    const std::vector<std::string> selectors = {
        "0", "1", "3", "99", "-1", "radv", "LLVMPIPE", "mali-g78 \xc3\x9c", "intel", "18446744073709551616"};
    for (std::size_t i = 0; i < selectors.size(); ++i) {
        put("device_selector", "selector-" + std::to_string(i), selectors[i]);
    }
}

// --- JSON and vkf-bench result files ------------------------------------------------------

void json_seeds() {
    const std::string t = "json";
    put(t, "numbers.json",
        R"([0, -0, 1, -1, 1.5, 2.0, 1e3, 1E-3, 9007199254740993, 18446744073709551615,)"
        R"( -9223372036854775808, 18446744073709551616, 1e308, 5e-324, 123456789012345678901234567890])");
    put(t, "strings.json", R"({"a": "\u00e9\ud83d\ude00\n\t\"\\\/", "b": "caf\u00e9", "": null, "c": [true, false]})");
    put(t, "nested.json", R"({"a": {"b": {"c": [[[[{"d": []}]]]]}}})");
    put(t, "index.json", R"({"metadata": {"total_size": 12}, "weight_map": {"a": "x.safetensors"}})");
    put(t, "repeated-key.json", R"({"a": 1, "a": 2})");
    put(t, "trailing-comma.json", R"([1, 2,])");

    bench::Run run;
    run.vkformer_version = "0.1.0";
    run.git_commit = std::string(40, 'a');
    run.created_utc = "2026-11-22T08:30:00Z";
    run.command_line = "vkf-bench run --quick --out r.json";
    run.suites = {"ceilings", "attention"};
    run.quick = true;
    run.warmup = 2;
    run.reps = 5;
    run.limit_overrides = "none";
    run.device = {{"name", "llvmpipe (LLVM 15.0.6, 256 bits)"}, {"vendor_id", 65541}, {"type", "cpu"}};
    run.effective_limits = {{"shared_memory", 65536}, {"subgroup_size", 8}};
    run.quirks = nlohmann::ordered_json::array({"llvmpipe loop iterations"});
    run.ceilings.bandwidth_gbps = 12.5;
    run.ceilings.fp32_gflops = 210.0;
    bench::Result ok{.suite = "attention", .name = "prefill bloom-560m q=128", .status = bench::Status::Ok};
    ok.params = {{.name = "q_len", .value = std::int64_t{128}}, {.name = "dtype", .value = std::string("f16")}};
    ok.plan = "tile 32x32";
    ok.timing = "gpu_timestamps";
    ok.reps_ms = {1.5, 1.25, 1.75, 1.5, 2.0};
    ok.stats = bench::stats_of(ok.reps_ms);
    ok.flops = 1000000;
    ok.bytes = 4096;
    ok.gflops = 0.66;
    ok.extra = {{"memory_bytes", 65536.0}};
    bench::Result skipped{.suite = "matmul", .name = "q4_0 4096x4096", .status = bench::Status::Skipped};
    skipped.message = "the device lacks int8 dot products";
    skipped.timing = "host_wall_clock";
    run.results = {ok, skipped};
    const std::string text = json_text(bench::run_json(run));
    put("bench_results", "run.json", text);
    put(t, "bench-run.json", text);
    std::string newer = text;
    replace_all(newer, R"("schema_version": 1)", R"("schema_version": 2)");
    put("bench_results", "newer-schema.json", newer);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: vkf_fuzz_seeds OUT_DIR REPO_ROOT\n");
        return 2;
    }
    try {
        g_out = argv[1];
        const fs::path repo = argv[2];
        fs::create_directories(g_out / ".scratch");
        safetensors_seeds();
        index_seeds();
        config_seeds(repo);
        npy_seeds();
        gguf_seeds();
        tokenizer_seeds(repo);
        quant_seeds();
        pipeline_cache_seeds();
        environment_seeds();
        json_seeds();
        fuzz::sequence_state_seeds([](const char* name, const std::string& b) { put("sequence_state", name, b); });
        fs::remove_all(g_out / ".scratch");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkf_fuzz_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
