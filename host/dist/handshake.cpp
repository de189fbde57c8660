#include "host/dist/handshake.hpp"

#include <vector>

namespace vkf::dist {

std::string handshake(Channel& channel, const Fingerprint& mine,
                      const std::function<std::string(std::span<const Fingerprint>)>& make_plan) {
    nlohmann::ordered_json verdict;
    if (channel.rank() == 0) {
        std::vector<Fingerprint> all{mine};
        for (int r = 1; r < channel.size(); ++r) {
            all.push_back(fingerprint_from_json(channel.receive_text(r, Tag::Hello)));
        }
        const std::string differences = compare_fingerprints(all);
        if (!differences.empty()) {
            verdict["error"] = "the ranks do not agree before loading: " + differences;
        } else {
            try {
                verdict["plan"] = make_plan(all);
            } catch (const Error& e) {
                verdict["error"] = e.what();
            }
        }
        const std::string text = json_text(verdict, JsonStyle::Compact);
        for (int r = 1; r < channel.size(); ++r) {
            channel.send_text(r, Tag::Verdict, text);
        }
    } else {
        channel.send_text(0, Tag::Hello, json_text(to_json(mine), JsonStyle::Compact));
        try {
            verdict = nlohmann::ordered_json::parse(channel.receive_text(0, Tag::Verdict));
        } catch (const nlohmann::json::exception& e) {
            throw Error(std::string("rank 0's handshake answer is not JSON: ") + e.what());
        }
    }
    if (verdict.contains("error")) {
        throw Error(verdict["error"].get<std::string>());
    }
    return verdict.at("plan").get<std::string>();
}

}  // namespace vkf::dist
