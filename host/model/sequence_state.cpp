#include "host/model/sequence_state.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "host/quant/kv_quant.hpp"
#include "host/spec/model_config.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>

namespace vkf {

static_assert(std::endian::native == std::endian::little, "the state format is little-endian, as the host");

namespace {

constexpr std::array<char, 8> kMagic = {'V', 'K', 'F', 'S', 'T', 'A', 'T', 'E'};
// magic, version, header bytes, the fingerprint, three counts, the KV bytes (u64).
constexpr std::uint32_t kHeaderBytes = 8 + 4 + 4 + sizeof(StateFingerprint) + 3 * 4 + 8;
constexpr std::uint64_t kTrailerBytes = 4;
// tokenizer.json is read whole to hash it; larger than this is no tokenizer.
constexpr std::uint64_t kMaxTokenizerBytes = 256ull << 20;

static_assert(sizeof(StateFingerprint) == 15 * 4, "the fingerprint is 15 u32 in the file");

struct Field {
    const char* name;
    std::uint32_t StateFingerprint::*member;
    enum { Number, Family, DTypeName, Quant, Hex } kind;
};

constexpr Field kFields[] = {
    {"family", &StateFingerprint::family, Field::Family},
    {"vocab_size", &StateFingerprint::vocab_size, Field::Number},
    {"hidden", &StateFingerprint::hidden, Field::Number},
    {"n_layer", &StateFingerprint::n_layer, Field::Number},
    {"n_head", &StateFingerprint::n_head, Field::Number},
    {"n_kv_head", &StateFingerprint::n_kv_head, Field::Number},
    {"head_dim", &StateFingerprint::head_dim, Field::Number},
    {"ffn_hidden", &StateFingerprint::ffn_hidden, Field::Number},
    {"weight dtype", &StateFingerprint::weight_dtype, Field::DTypeName},
    {"weight quantization", &StateFingerprint::weight_quant, Field::Quant},
    {"KV dtype", &StateFingerprint::kv_dtype, Field::DTypeName},
    {"K quantization", &StateFingerprint::kv_k_quant, Field::Quant},
    {"V quantization", &StateFingerprint::kv_v_quant, Field::Quant},
    {"KV block size", &StateFingerprint::block_size, Field::Number},
    {"tokenizer hash", &StateFingerprint::tokenizer_crc, Field::Hex},
};

std::string field_text(const Field& field, std::uint32_t value) {
    switch (field.kind) {
        case Field::Family:
            return value <= static_cast<std::uint32_t>(ModelFamily::Refact)
                       ? std::string(family_name(static_cast<ModelFamily>(value)))
                       : fmt::format("family {}", value);
        case Field::DTypeName:
            return value <= static_cast<std::uint32_t>(DType::Bool) ? to_string(static_cast<DType>(value))
                                                                    : fmt::format("dtype {}", value);
        case Field::Quant:
            return value <= static_cast<std::uint32_t>(QuantFormat::Q4_0) ? to_string(static_cast<QuantFormat>(value))
                                                                          : fmt::format("format {}", value);
        case Field::Hex:
            return fmt::format("{:08x}", value);
        case Field::Number:
            break;
    }
    return fmt::to_string(value);
}

std::uint32_t crc32_of(std::span<const std::byte> bytes) {
    uLong crc = crc32(0L, Z_NULL, 0);
    // zlib takes uInt lengths: feed it in pieces below 4 GiB.
    constexpr std::size_t kPiece = 1u << 30;
    for (std::size_t at = 0; at < bytes.size(); at += kPiece) {
        const std::size_t n = std::min(kPiece, bytes.size() - at);
        crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), static_cast<uInt>(n));
    }
    return static_cast<std::uint32_t>(crc);
}

class Writer {
public:
    explicit Writer(std::vector<std::byte>& out) : out_(out) {}
    void bytes(const void* p, std::size_t n) {
        const auto* b = static_cast<const std::byte*>(p);
        out_.insert(out_.end(), b, b + n);
    }
    template <class T>
    void value(T v) {
        bytes(&v, sizeof v);
    }
    void u32s(std::span<const std::uint32_t> v) { bytes(v.data(), v.size_bytes()); }

private:
    std::vector<std::byte>& out_;
};

class Reader {
public:
    explicit Reader(std::span<const std::byte> in) : in_(in) {}
    template <class T>
    T value() {
        T v;
        std::memcpy(&v, in_.data() + at_, sizeof v);
        at_ += sizeof v;
        return v;
    }
    std::vector<std::uint32_t> u32s(std::size_t n) {
        std::vector<std::uint32_t> v(n);
        std::memcpy(v.data(), in_.data() + at_, n * 4);
        at_ += n * 4;
        return v;
    }
    std::span<const std::byte> take(std::uint64_t n) {
        const auto piece = in_.subspan(at_, n);
        at_ += n;
        return piece;
    }

private:
    std::span<const std::byte> in_;
    std::size_t at_ = 0;
};

std::uint64_t blocks_of(const StateFingerprint& f, std::uint64_t tokens) {
    return f.block_size == 0 ? 0 : (tokens + f.block_size - 1) / f.block_size;
}

std::uint64_t kv_bytes_of(const StateFingerprint& f, std::uint64_t tokens) {
    return std::uint64_t{f.n_layer} * blocks_of(f, tokens) * (state_k_block_bytes(f) + state_v_block_bytes(f));
}

}  // namespace

std::string fingerprint_differences(const StateFingerprint& state, const StateFingerprint& session) {
    std::string text;
    for (const Field& field : kFields) {
        const std::uint32_t a = state.*field.member;
        const std::uint32_t b = session.*field.member;
        if (a != b) {
            text += fmt::format("{}{}: the state has {}, this session {}", text.empty() ? "" : "; ", field.name,
                                field_text(field, a), field_text(field, b));
        }
    }
    return text;
}

std::uint64_t state_k_block_bytes(const StateFingerprint& f) {
    // The key rows as KvCache lays them out (host/quant/kv_quant.hpp): every head's scales, then the blocks.
    return std::uint64_t{f.block_size} * kv_row_bytes(static_cast<DType>(f.kv_dtype),
                                                      static_cast<QuantFormat>(f.kv_k_quant), f.n_kv_head * f.head_dim);
}

std::uint64_t state_v_block_bytes(const StateFingerprint& f) {
    // The key rows as KvCache lays them out (host/quant/kv_quant.hpp): every head's scales, then the blocks.
    return std::uint64_t{f.block_size} * kv_row_bytes(static_cast<DType>(f.kv_dtype),
                                                      static_cast<QuantFormat>(f.kv_v_quant), f.n_kv_head * f.head_dim);
}

SequenceState state_prefix(const SequenceState& state, std::uint32_t tokens) {
    const StateFingerprint& f = state.model;
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(tokens, state.tokens.size()));
    SequenceState prefix{
        .model = f, .tokens = {state.tokens.begin(), state.tokens.begin() + n}, .chunk_ends = {}, .kv = {}};
    for (std::uint32_t end : state.chunk_ends) {
        if (end <= n) {
            prefix.chunk_ends.push_back(end);
        }
    }
    if (n > 0 && (prefix.chunk_ends.empty() || prefix.chunk_ends.back() != n)) {
        prefix.chunk_ends.push_back(n);
    }
    // Per layer: the first blocks of K, then of V.
    const std::uint64_t blocks = blocks_of(f, state.tokens.size());
    const std::uint64_t kept = blocks_of(f, n);
    const std::uint64_t k = state_k_block_bytes(f);
    const std::uint64_t v = state_v_block_bytes(f);
    prefix.kv.reserve(f.n_layer * kept * (k + v));
    for (std::uint64_t l = 0; l < f.n_layer; ++l) {
        const auto layer = state.kv.begin() + static_cast<std::ptrdiff_t>(l * blocks * (k + v));
        prefix.kv.insert(prefix.kv.end(), layer, layer + static_cast<std::ptrdiff_t>(kept * k));
        const auto v_start = layer + static_cast<std::ptrdiff_t>(blocks * k);
        prefix.kv.insert(prefix.kv.end(), v_start, v_start + static_cast<std::ptrdiff_t>(kept * v));
    }
    return prefix;
}

std::uint64_t serialized_state_size(const StateFingerprint& f, std::size_t tokens, std::size_t chunk_ends) {
    return kHeaderBytes + 4 * (std::uint64_t{tokens} + chunk_ends) + kv_bytes_of(f, tokens) + kTrailerBytes;
}

std::vector<std::byte> serialize_state(const SequenceState& state) {
    const StateFingerprint& f = state.model;
    if (state.kv.size() != kv_bytes_of(f, state.tokens.size())) {
        throw Error(fmt::format("sequence state: {} KV bytes for {} tokens; {} expected", state.kv.size(),
                                state.tokens.size(), kv_bytes_of(f, state.tokens.size())));
    }
    std::vector<std::byte> out;
    out.reserve(serialized_state_size(f, state.tokens.size(), state.chunk_ends.size()));
    Writer w(out);
    w.bytes(kMagic.data(), kMagic.size());
    w.value(kSequenceStateVersion);
    w.value(kHeaderBytes);
    w.value(f);
    w.value(static_cast<std::uint32_t>(state.tokens.size()));
    w.value(static_cast<std::uint32_t>(state.chunk_ends.size()));
    w.value(static_cast<std::uint32_t>(blocks_of(f, state.tokens.size())));
    w.value(static_cast<std::uint64_t>(state.kv.size()));
    w.u32s(state.tokens);
    w.u32s(state.chunk_ends);
    w.bytes(state.kv.data(), state.kv.size());
    w.value(crc32_of(out));
    return out;
}

SequenceState parse_state(std::span<const std::byte> bytes, const StateFingerprint& expected, std::string_view what) {
    const std::size_t size = bytes.size();
    if (std::memcmp(bytes.data(), kMagic.data(), std::min(size, kMagic.size())) != 0 || size == 0) {
        throw Error(fmt::format("{}: not a vkformer sequence state (it does not start with \"VKFSTATE\")", what));
    }
    if (size < 16) {
        throw Error(fmt::format("{}: truncated: {} bytes, shorter than a state's header", what, size));
    }
    Reader header(bytes.subspan(kMagic.size()));
    const auto version = header.value<std::uint32_t>();
    const auto header_bytes = header.value<std::uint32_t>();
    if (version > kSequenceStateVersion) {
        throw Error(
            fmt::format("{}: format version {} is newer than this vkformer reads (up to {}); load it with the "
                        "vkformer that wrote it",
                        what, version, kSequenceStateVersion));
    }
    if (version == 0 || header_bytes != kHeaderBytes) {
        throw Error(fmt::format("{}: corrupted: format version {} with a {}-byte header (version {} has {})", what,
                                version, header_bytes, kSequenceStateVersion, kHeaderBytes));
    }
    if (size < kHeaderBytes + kTrailerBytes) {
        throw Error(fmt::format("{}: truncated: {} bytes, shorter than a state's header", what, size));
    }
    const auto model = header.value<StateFingerprint>();
    const auto n_tokens = header.value<std::uint32_t>();
    const auto n_chunk_ends = header.value<std::uint32_t>();
    const auto n_blocks = header.value<std::uint32_t>();
    const auto kv_bytes = header.value<std::uint64_t>();
    // In 64 bits: counts of 2^32 and a kv_bytes near 2^64 must not wrap into a size that fits.
    const std::uint64_t body = 4 * (std::uint64_t{n_tokens} + n_chunk_ends);
    const std::uint64_t total = kv_bytes > std::numeric_limits<std::uint64_t>::max() / 2
                                    ? std::numeric_limits<std::uint64_t>::max()
                                    : kHeaderBytes + body + kv_bytes + kTrailerBytes;
    if (size < total) {
        throw Error(fmt::format("{}: truncated: {} bytes of the {} its header says", what, size, total));
    }
    if (size > total) {
        throw Error(fmt::format("{}: corrupted: {} bytes, {} more than its header says", what, size, size - total));
    }
    std::uint32_t stored_crc = 0;
    std::memcpy(&stored_crc, bytes.data() + size - kTrailerBytes, kTrailerBytes);
    const std::uint32_t crc = crc32_of(bytes.first(size - kTrailerBytes));
    if (crc != stored_crc) {
        throw Error(fmt::format("{}: corrupted: its CRC-32 is {:08x}, its bytes give {:08x}", what, stored_crc, crc));
    }
    const std::string differences = fingerprint_differences(model, expected);
    if (!differences.empty()) {
        throw Error(fmt::format("{}: saved from another model or KV-cache format ({})", what, differences));
    }
    // Intact and of this model: what is left wrong is a writer's bug, still never loaded.
    if (n_blocks != blocks_of(model, n_tokens) || kv_bytes != kv_bytes_of(model, n_tokens)) {
        throw Error(fmt::format("{}: corrupted: {} tokens in {} blocks of {} KV bytes; {} blocks of {} expected", what,
                                n_tokens, n_blocks, kv_bytes, blocks_of(model, n_tokens),
                                kv_bytes_of(model, n_tokens)));
    }
    Reader body_reader(bytes.subspan(kHeaderBytes));
    SequenceState state{
        .model = model, .tokens = body_reader.u32s(n_tokens), .chunk_ends = body_reader.u32s(n_chunk_ends), .kv = {}};
    const auto kv = body_reader.take(kv_bytes);
    state.kv.assign(kv.begin(), kv.end());
    for (std::size_t i = 0; i < state.tokens.size(); ++i) {
        if (state.tokens[i] >= model.vocab_size) {
            throw Error(fmt::format("{}: corrupted: token {} is {}, not below the vocabulary size {}", what, i,
                                    state.tokens[i], model.vocab_size));
        }
    }
    std::uint32_t previous = 0;
    for (std::uint32_t end : state.chunk_ends) {
        if (end <= previous || end > n_tokens) {
            throw Error(
                fmt::format("{}: corrupted: chunk end {} after {} (of {} tokens)", what, end, previous, n_tokens));
        }
        previous = end;
    }
    if (n_tokens > 0 && previous != n_tokens) {
        throw Error(fmt::format("{}: corrupted: its chunks end at {}, not at its {} tokens", what, previous, n_tokens));
    }
    return state;
}

std::uint32_t file_crc32(const std::string& path) {
    if (path.empty() || !std::filesystem::is_regular_file(path)) {
        return 0;
    }
    const std::string bytes = read_file(path, kMaxTokenizerBytes, "tokenizer.json");
    return crc32_of(std::as_bytes(std::span(bytes)));
}

}  // namespace vkf
