#include "host/spec/refact_layout.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace vkf {
namespace {

constexpr std::string_view kQ = ".attn.q.weight", kKv = ".attn.kv.weight", kQkv = ".attn.qkv.weight";
constexpr std::string_view kGateUp = ".mlp.gate_up_proj.weight", kGate = ".mlp.gate_proj.weight",
                           kUp = ".mlp.up_proj.weight";

// `name` without `suffix`, when it ends with it.
std::optional<std::string> stem(std::string_view name, std::string_view suffix) {
    if (!name.ends_with(suffix)) {
        return std::nullopt;
    }
    return std::string(name.substr(0, name.size() - suffix.size()));
}

class RefactTensorFile final : public TensorFile {
public:
    explicit RefactTensorFile(ShardedCheckpoint inner) : inner_(std::move(inner)) {
        for (const std::string& name : inner_.tensor_names()) {
            const CheckpointTensor& tensor = inner_.at(name);
            if (const auto layer = stem(name, kQ)) {
                const CheckpointTensor* kv = inner_.find(*layer + std::string(kKv));
                if (kv == nullptr) {
                    fail(fmt::format("tensor '{}' has no '{}{}' beside it", name, *layer, kKv));
                }
                concatenate(*layer + std::string(kQkv), {tensor, *kv});
            } else if (const auto kv_layer = stem(name, kKv)) {
                if (inner_.find(*kv_layer + std::string(kQ)) == nullptr) {
                    fail(fmt::format("tensor '{}' has no '{}{}' beside it", name, *kv_layer, kQ));
                }
            } else if (const auto mlp_layer = stem(name, kGateUp)) {
                split_halves(*mlp_layer, tensor);
            } else {
                add(name, tensor.info->dtype, tensor.info->shape, {whole(tensor)});
            }
        }
        if (!inner_.files().empty()) {
            metadata_ = inner_.files().front()->metadata();
        }
    }

    const std::filesystem::path& path() const override { return inner_.files().front()->path(); }
    std::uint64_t file_size() const override {
        std::uint64_t size = 0;
        for (const auto& file : inner_.files()) {
            size += file->file_size();
        }
        return size;
    }
    std::string label() const override { return fmt::format("Refact checkpoint '{}'", inner_.source().string()); }
    std::span<const TensorInfo> tensors() const override { return tensors_; }
    const std::map<std::string, std::string>& metadata() const override { return metadata_; }
    const TensorInfo* find(std::string_view name) const override {
        const auto it = index_.find(std::string(name));
        return it == index_.end() ? nullptr : &tensors_[it->second];
    }

    void read_raw_into(const TensorInfo& info, std::uint64_t offset, std::span<std::byte> out) const override {
        const TensorInfo* own = find(info.name);
        if (own == nullptr || own->data_begin != info.data_begin) {
            throw Error(fmt::format("{}: tensor '{}' is not one of this checkpoint's", label(), info.name));
        }
        if (offset > own->byte_size() || out.size() > own->byte_size() - offset) {
            throw Error(fmt::format("{}: tensor '{}': bytes {} to {} lie beyond its {}", label(), info.name, offset,
                                    offset + out.size(), own->byte_size()));
        }
        std::uint64_t segment_start = 0, done = 0;
        for (const Segment& segment : segments_[static_cast<std::size_t>(own - tensors_.data())]) {
            const std::uint64_t pos = offset + done;
            if (done < out.size() && pos < segment_start + segment.size) {
                const std::uint64_t within = pos - segment_start;
                const std::uint64_t n = std::min<std::uint64_t>(segment.size - within, out.size() - done);
                segment.file->read_raw_into(*segment.info, segment.begin + within,
                                            out.subspan(static_cast<std::size_t>(done), static_cast<std::size_t>(n)));
                done += n;
            }
            segment_start += segment.size;
        }
    }

private:
    // Bytes [begin, begin + size) of a stored tensor.
    struct Segment {
        const TensorFile* file;
        const TensorInfo* info;
        std::uint64_t begin, size;
    };

    [[noreturn]] void fail(const std::string& problem) const {
        throw Error(fmt::format("Refact checkpoint '{}': {}", inner_.source().string(), problem));
    }
    static Segment whole(const CheckpointTensor& tensor) {
        return {tensor.file, tensor.info, 0, tensor.info->byte_size()};
    }
    void require_matrix(const TensorInfo& info) const {
        if (info.shape.size() != 2) {
            fail(fmt::format("tensor '{}' has shape [{}], not a matrix", info.name, fmt::join(info.shape, ", ")));
        }
    }

    void concatenate(const std::string& name, std::initializer_list<CheckpointTensor> parts) {
        const TensorInfo& first = *parts.begin()->info;
        require_matrix(first);
        std::vector<std::size_t> shape = {0, first.shape[1]};
        std::vector<Segment> segments;
        for (const CheckpointTensor& part : parts) {
            require_matrix(*part.info);
            if (part.info->dtype != first.dtype || part.info->shape[1] != first.shape[1]) {
                fail(
                    fmt::format("tensors '{}' ({} [{}]) and '{}' ({} [{}]) make one '{}' and must have one dtype "
                                "and row length",
                                first.name, to_string(first.dtype), fmt::join(first.shape, ", "), part.info->name,
                                to_string(part.info->dtype), fmt::join(part.info->shape, ", "), name));
            }
            shape[0] += part.info->shape[0];
            segments.push_back(whole(part));
        }
        add(name, first.dtype, std::move(shape), std::move(segments));
    }

    void split_halves(const std::string& layer, const CheckpointTensor& fused) {
        const TensorInfo& info = *fused.info;
        require_matrix(info);
        if (info.shape[0] % 2 != 0) {
            fail(fmt::format("tensor '{}' has {} rows, not the gate's and up's halves", info.name, info.shape[0]));
        }
        const std::uint64_t half = info.byte_size() / 2;
        const std::vector<std::size_t> shape = {info.shape[0] / 2, info.shape[1]};
        add(layer + std::string(kGate), info.dtype, shape, {Segment{fused.file, &info, 0, half}});
        add(layer + std::string(kUp), info.dtype, shape, {Segment{fused.file, &info, half, half}});
    }

    void add(std::string name, DType dtype, std::vector<std::size_t> shape, std::vector<Segment> segments) {
        const std::uint64_t begin = tensors_.empty() ? 0 : tensors_.back().data_end;
        std::uint64_t size = 0;
        for (const Segment& segment : segments) {
            size += segment.size;
        }
        if (!index_.emplace(name, tensors_.size()).second) {
            fail(fmt::format("two tensors are both '{}'", name));
        }
        tensors_.push_back(TensorInfo{.name = std::move(name),
                                      .dtype = dtype,
                                      .shape = std::move(shape),
                                      .data_begin = begin,
                                      .data_end = begin + size});
        segments_.push_back(std::move(segments));
    }

    ShardedCheckpoint inner_;
    std::vector<TensorInfo> tensors_;
    std::vector<std::vector<Segment>> segments_;  // parallel to tensors_
    std::unordered_map<std::string, std::size_t> index_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace

bool holds_refact_layout(const ShardedCheckpoint& checkpoint) {
    const std::vector<std::string> names = checkpoint.tensor_names();
    return std::any_of(names.begin(), names.end(),
                       [](const std::string& name) { return name.ends_with(kKv) || name.ends_with(kGateUp); });
}

ShardedCheckpoint present_refact_layout(ShardedCheckpoint checkpoint) {
    const std::filesystem::path source = checkpoint.source();
    return ShardedCheckpoint::of_file(source, std::make_unique<RefactTensorFile>(std::move(checkpoint)));
}

ShardedCheckpoint with_refact_layout(ShardedCheckpoint checkpoint) {
    return holds_refact_layout(checkpoint) ? present_refact_layout(std::move(checkpoint)) : std::move(checkpoint);
}

std::vector<TensorSource> refact_stored_tensors(std::vector<TensorSource> tensors) {
    std::vector<TensorSource> out;
    std::unordered_map<std::string, TensorSource> gates;
    for (TensorSource& tensor : tensors) {
        if (const auto layer = stem(tensor.name, kQkv)) {
            // [q | k | v] of hidden + 2 head_dim rows: q is square.
            const std::size_t columns = tensor.shape[1], q_rows = columns;
            const std::uint64_t q_elements = std::uint64_t{q_rows} * columns;
            auto values = tensor.values;
            out.push_back({*layer + std::string(kQ), {q_rows, columns}, values});
            out.push_back(
                {*layer + std::string(kKv),
                 {tensor.shape[0] - q_rows, columns},
                 [values, q_elements](std::uint64_t first, std::span<float> o) { values(q_elements + first, o); }});
        } else if (const auto gate_layer = stem(tensor.name, kGate)) {
            gates.emplace(*gate_layer, std::move(tensor));
        } else if (const auto up_layer = stem(tensor.name, kUp)) {
            const auto gate = gates.find(*up_layer);
            if (gate == gates.end()) {
                throw Error(fmt::format("Refact writer: '{}' comes before its gate", tensor.name));
            }
            const std::uint64_t half = std::uint64_t{tensor.shape[0]} * tensor.shape[1];
            auto gate_values = gate->second.values, up_values = tensor.values;
            out.push_back({*up_layer + std::string(kGateUp),
                           {2 * tensor.shape[0], tensor.shape[1]},
                           [gate_values, up_values, half](std::uint64_t first, std::span<float> o) {
                               const std::uint64_t in_gate =
                                   first < half ? std::min<std::uint64_t>(half - first, o.size()) : 0;
                               if (in_gate > 0) {
                                   gate_values(first, o.first(static_cast<std::size_t>(in_gate)));
                               }
                               if (in_gate < o.size()) {
                                   up_values(first + in_gate - half, o.subspan(static_cast<std::size_t>(in_gate)));
                               }
                           }});
            gates.erase(gate);
        } else {
            out.push_back(std::move(tensor));
        }
    }
    return out;
}

}  // namespace vkf
