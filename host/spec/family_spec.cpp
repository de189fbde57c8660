#include "host/spec/family_spec.hpp"

#include "base/error.hpp"
#include "host/spec/families/families.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace vkf {

std::span<const FamilySpec> families() {
    // In ModelFamily order; test_family_table checks that every value has its entry.
    static const auto table = std::to_array<FamilySpec>({
        family_defs::bloom(),
        family_defs::mpt(),
        family_defs::falcon(),
        family_defs::baichuan(),
        family_defs::jais(),
        family_defs::refact(),
    });
    return table;
}

const FamilySpec& family_spec(ModelFamily family) {
    const auto index = static_cast<std::size_t>(family);
    const std::span<const FamilySpec> all = families();
    if (index >= all.size() || all[index].family != family) {
        throw Error("model config: unknown family " + fmt::to_string(static_cast<int>(family)));
    }
    return all[index];
}

const FamilySpec* find_family_by_model_type(std::string_view type) {
    for (const FamilySpec& spec : families()) {
        for (std::string_view model_type : spec.model_types) {
            if (model_type == type) {
                return &spec;
            }
        }
    }
    return nullptr;
}

CheckpointFamily find_checkpoint_family(std::string_view name) {
    for (const FamilySpec& spec : families()) {
        for (const CheckpointVariant& variant : spec.writer.variants) {
            if (variant.name == name) {
                return {.spec = &spec, .variant = &variant};
            }
        }
    }
    return {};
}

CheckpointFamilyPreset find_checkpoint_preset(std::string_view name) {
    for (const FamilySpec& spec : families()) {
        for (const CheckpointPreset& preset : spec.writer.presets) {
            if (preset.name == name) {
                return {.spec = &spec, .preset = &preset};
            }
        }
    }
    return {};
}

std::string and_list(std::span<const std::string_view> words) {
    std::string text;
    for (std::size_t i = 0; i < words.size(); ++i) {
        text += i == 0 ? "" : i + 1 == words.size() ? " and " : ", ";
        text += words[i];
    }
    return text;
}

void CheckpointOptionValues::set(std::string_view flag, double value) {
    values_.insert_or_assign(std::string(flag), value);
}

bool CheckpointOptionValues::given(std::string_view flag) const {
    return values_.find(flag) != values_.end();
}

std::optional<double> CheckpointOptionValues::number(std::string_view flag) const {
    const auto found = values_.find(flag);
    return found == values_.end() ? std::nullopt : std::optional<double>(found->second);
}

std::optional<std::uint32_t> CheckpointOptionValues::count(std::string_view flag) const {
    const std::optional<double> value = number(flag);
    if (!value) {
        return std::nullopt;
    }
    if (!(*value >= 0.0) || *value > 4294967295.0 || std::trunc(*value) != *value) {
        throw Error("checkpoint writer: " + std::string(flag) + " " + fmt::format("{:f}", *value) +
                    " is not a whole number below 2^32");
    }
    return static_cast<std::uint32_t>(*value);
}

}  // namespace vkf
