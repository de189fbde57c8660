#include "host/dist/fingerprint.hpp"

#include "base/error.hpp"
#include "base/files.hpp"
#include "host/io/gguf.hpp"
#include "host/io/safetensors.hpp"
#include "host/util/dtype.hpp"
#include "vkf_version.hpp"

#include <fmt/format.h>

#include <map>
#include <vector>

namespace vkf::dist {

namespace {

// Files a checkpoint's config may be; their size limit is only a guard against absurd files.
constexpr std::uint64_t kMaxConfigBytes = 64ull << 20;

class Fnv1a {
public:
    void add(std::string_view bytes) {
        for (const char c : bytes) {
            hash_ ^= static_cast<unsigned char>(c);
            hash_ *= 1099511628211ull;
        }
        // A separator, so that "ab"+"c" and "a"+"bc" differ.
        hash_ ^= 0xff;
        hash_ *= 1099511628211ull;
    }
    std::string hex() const { return fmt::format("{:016x}", hash_); }

private:
    std::uint64_t hash_ = 14695981039346656037ull;
};

}  // namespace

std::string fnv1a_hex(std::string_view bytes) {
    Fnv1a h;
    h.add(bytes);
    return h.hex();
}

namespace {

// A GGUF file holds its configuration and tensor infos in its header: ranks agree when their
// headers are byte for byte the same (metadata, tokenizer, every tensor's type, shape and
// offset), and when the files are as long.
void fingerprint_gguf(const std::filesystem::path& model, Fingerprint& f) {
    const GgufFile file = open_gguf(model);
    if (file.data_offset() > kMaxConfigBytes) {
        throw Error(fmt::format("{}: a header of {} bytes is more than the {} a rank's fingerprint reads", file.label(),
                                file.data_offset(), kMaxConfigBytes));
    }
    const ReadableFile source(model, "GGUF file");
    std::string header(file.data_offset(), '\0');
    source.read_at(0, std::as_writable_bytes(std::span(header)));
    f.config = fnv1a_hex(header);
    f.checkpoint = fnv1a_hex(fmt::format("gguf {} bytes", file.file_size()));
}

}  // namespace

Fingerprint fingerprint(const std::filesystem::path& model, std::string split, std::string options) {
    Fingerprint f;
    f.version = fmt::format("{} ({}{})", build::kVersion, build::kGitCommit, build::kGitDirty ? ", modified" : "");
    f.split = std::move(split);
    f.options = std::move(options);
    std::error_code ignored;  // a path that cannot be inspected is reported by the reads below
    if (std::filesystem::is_regular_file(model, ignored) && looks_like_gguf(model)) {
        fingerprint_gguf(model, f);
        return f;
    }
    f.config = fnv1a_hex(read_file(model / "config.json", kMaxConfigBytes, "config.json"));
    Fnv1a h;
    const std::filesystem::path index = model / "model.safetensors.index.json";
    if (!std::filesystem::exists(model / "model.safetensors") && std::filesystem::exists(index)) {
        h.add(read_file(index, kMaxConfigBytes, "model.safetensors.index.json"));
    }
    const ShardedCheckpoint checkpoint = open_checkpoint(model);
    for (const auto& file : checkpoint.files()) {
        h.add(file->path().filename().string());
        h.add(fmt::to_string(file->file_size()));
        for (const auto& [key, value] : file->metadata()) {
            h.add(key);
            h.add(value);
        }
        for (const TensorInfo& t : file->tensors()) {
            h.add(t.name);
            h.add(to_string(t.dtype));
            h.add(fmt::format("{}", fmt::join(t.shape, "x")));
            h.add(fmt::format("{}-{}", t.data_begin, t.data_end));
        }
    }
    f.checkpoint = h.hex();
    return f;
}

nlohmann::ordered_json to_json(const Fingerprint& f) {
    return {{"version", f.version},
            {"config", f.config},
            {"checkpoint", f.checkpoint},
            {"split", f.split},
            {"options", f.options},
            {"device",
             {{"host", f.device.host}, {"name", f.device.name}, {"uuid", f.device.uuid}, {"budget", f.device.budget}}}};
}

Fingerprint fingerprint_from_json(const std::string& text) {
    try {
        const auto j = nlohmann::json::parse(text);
        const auto& d = j.at("device");
        return {.version = j.at("version"),
                .config = j.at("config"),
                .checkpoint = j.at("checkpoint"),
                .split = j.at("split"),
                .options = j.at("options"),
                .device = {.host = d.at("host"), .name = d.at("name"), .uuid = d.at("uuid"), .budget = d.at("budget")}};
    } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("a rank's handshake message is not a vkformer fingerprint ({})", e.what()));
    }
}

std::string compare_fingerprints(std::span<const Fingerprint> by_rank) {
    struct Field {
        const char* name;
        std::string Fingerprint::*member;
    };
    const Field fields[] = {{"vkformer version", &Fingerprint::version},
                            {"configuration (hash of config.json or the GGUF header)", &Fingerprint::config},
                            {"checkpoint (hash of its index and tensor headers)", &Fingerprint::checkpoint},
                            {"split", &Fingerprint::split},
                            {"options", &Fingerprint::options}};
    std::vector<std::string> sentences;
    for (const Field& field : fields) {
        // Values in the order of the first rank that has each.
        std::vector<std::pair<std::string, std::vector<std::size_t>>> groups;
        for (std::size_t r = 0; r < by_rank.size(); ++r) {
            const std::string& value = by_rank[r].*field.member;
            auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == value; });
            if (it == groups.end()) {
                groups.push_back({value, {r}});
            } else {
                it->second.push_back(r);
            }
        }
        if (groups.size() < 2) {
            continue;
        }
        std::vector<std::string> parts;
        for (const auto& [value, ranks] : groups) {
            parts.push_back(fmt::format("{} {} {} '{}'", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "),
                                        ranks.size() == 1 ? "has" : "have", value));
        }
        sentences.push_back(fmt::format("the {} differs: {}", field.name, fmt::join(parts, "; ")));
    }
    return fmt::format("{}", fmt::join(sentences, ". "));
}

std::vector<std::uint64_t> shared_budgets(std::span<const Fingerprint> by_rank) {
    std::vector<std::uint64_t> budgets;
    for (const Fingerprint& f : by_rank) {
        const auto sharing = std::count_if(by_rank.begin(), by_rank.end(), [&](const Fingerprint& other) {
            return other.device.host == f.device.host && other.device.name == f.device.name &&
                   other.device.uuid == f.device.uuid;
        });
        budgets.push_back(f.device.budget / static_cast<std::uint64_t>(sharing));
    }
    return budgets;
}

}  // namespace vkf::dist
