// host/serve/request_field_table.cpp against docs/SERVER.md's "Request fields" tables and
// against the parser: every row's use (honoured, refused, ignored) is what a body holding the
// field gets, an unknown field or the other endpoint's is refused naming it, and the docs list
// exactly the code's rows.

#include "host/serve/api_error.hpp"
#include "host/serve/request.hpp"
#include "host/serve/request_field_table.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

namespace vkf::serve {
namespace {

const RequestLimits kLimits{};

using Row = std::tuple<std::string, std::string, std::string>;  // name, endpoint, use

// A value each field takes that is not its neutral one; some need a companion field.
const std::map<std::string, std::string>& samples(Endpoint e) {
    static const std::map<std::string, std::string> common = {
        {"model", R"("m")"},
        {"max_tokens", "3"},
        {"max_completion_tokens", "3"},
        {"temperature", "0.5"},
        {"top_p", "0.9"},
        {"top_k", "5"},
        {"min_p", "0.1"},
        {"typical_p", "0.9"},
        {"repetition_penalty", "1.1"},
        {"presence_penalty", "0.5"},
        {"frequency_penalty", "0.5"},
        {"repeat_last_n", "32"},
        {"logit_bias", R"({"5": 1})"},
        {"seed", "7"},
        {"stop", R"("x")"},
        {"n", "2"},
        {"stream", "true"},
        {"stream_options", R"({"include_usage": true}, "stream": true)"},
        {"top_logprobs", R"(2, "logprobs": true)"},
        {"echo", "true"},
        {"ignore_eos", "true"},
        {"cache_salt", R"("tenant")"},
        {"best_of", "2"},
        {"suffix", R"("x")"},
        {"tools", R"([{"type": "function", "function": {"name": "f"}}])"},
        {"tool_choice", R"("auto", "tools": [{"type": "function", "function": {"name": "f"}}])"},
        {"functions", R"([{"name": "f"}])"},
        {"function_call", R"("auto")"},
        {"response_format", R"({"type": "json_object"})"},
        {"grammar", R"("root ::= \"a\"")"},
        {"json_schema", R"({"type": "object"})"},
        {"mirostat", "2"},
        {"tfs_z", "0.5"},
        {"dry_multiplier", "0.8"},
        {"xtc_probability", "0.5"},
        {"dynatemp_range", "0.5"},
        {"top_n_sigma", "1"},
        {"n_probs", "3"},
        {"parallel_tool_calls", "false"},
        {"modalities", R"(["text", "audio"])"},
        {"audio", R"({"voice": "alloy", "format": "mp3"})"},
        {"prediction", R"({"type": "content", "content": "x"})"},
        {"web_search_options", "{}"},
        {"reasoning_effort", R"("low")"},
        {"verbosity", R"("low")"},
        {"moderation", "{}"},
        {"user", R"("u")"},
        {"safety_identifier", R"("s")"},
        {"metadata", R"({"k": "v"})"},
        {"store", "true"},
        {"service_tier", R"("auto")"},
        {"prompt_cache_key", R"("k")"},
        {"prompt_cache_retention", R"("24h")"},
        {"prompt_cache_options", R"({"ttl": "1h"})"},
    };
    static const std::map<std::string, std::string> completions = [] {
        auto m = common;
        m["logprobs"] = "2";
        return m;
    }();
    static const std::map<std::string, std::string> chat = [] {
        auto m = common;
        m["logprobs"] = "true";
        return m;
    }();
    return e == Endpoint::Chat ? chat : completions;
}

const std::map<std::string, std::string> kMessageSamples = {
    {"name", R"("bob")"},
    {"refusal", R"("no")"},
    {"tool_calls", R"([{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}])"},
    {"tool_call_id", R"("c")"},
    {"function_call", R"({"name": "f", "arguments": "{}"})"},
    {"audio", R"({"id": "a"})"},
};

// What parsing `body` gives: "" when accepted, else the refusal's param.
std::string outcome(const std::string& body, Endpoint e) {
    try {
        if (e == Endpoint::Chat) {
            parse_chat_request(body, kLimits);
        } else {
            parse_completion_request(body, kLimits);
        }
        return "";
    } catch (const ApiError& err) {
        EXPECT_EQ(err.status(), 400) << body;
        return err.param().value_or("(no param)");
    }
}

std::string body_with(Endpoint e, const std::string& key, const std::string& value) {
    const std::string base =
        e == Endpoint::Chat ? R"("messages": [{"role": "user", "content": "x"}])" : R"("prompt": "x")";
    if (key == "prompt" || key == "messages") {
        return fmt::format("{{{}}}", base);
    }
    return fmt::format(R"({{{}, "{}": {}}})", base, key, value);
}

TEST(RequestFieldTable, EachRowIsWhatTheParserDoes) {
    for (const Endpoint e : {Endpoint::Completions, Endpoint::Chat}) {
        for (const RequestField& f : request_fields()) {
            if (!(e == Endpoint::Chat ? f.chat : f.completions)) {
                continue;
            }
            SCOPED_TRACE(fmt::format("{} ({})", f.name, e == Endpoint::Chat ? "chat" : "completions"));
            const std::string key(f.name);
            const auto sample = samples(e).find(key);
            if (key != "prompt" && key != "messages") {
                ASSERT_NE(sample, samples(e).end()) << "no sample value for " << key;
            }
            const std::string got = outcome(body_with(e, key, sample == samples(e).end() ? "" : sample->second), e);
            EXPECT_EQ(got, f.use == FieldUse::Refused ? key : "");
        }
    }
    for (const RequestField& f : message_fields()) {
        SCOPED_TRACE(f.name);
        const std::string key(f.name);
        if (key == "role" || key == "content") {
            continue;  // every message holds them
        }
        const std::string body = fmt::format(R"({{"messages": [{{"role": "assistant", "content": "x", "{}": {}}}]}})",
                                             key, kMessageSamples.at(key));
        EXPECT_EQ(outcome(body, Endpoint::Chat), f.use == FieldUse::Refused ? "messages[0]." + key : "");
    }
}

TEST(RequestFieldTable, UnknownAndOtherEndpointsFieldsAreRefused) {
    EXPECT_EQ(outcome(R"({"prompt": "x", "temprature": 0})", Endpoint::Completions), "temprature");
    EXPECT_EQ(outcome(R"({"messages": [{"role": "user", "content": "x"}], "frobnicate": 1})", Endpoint::Chat),
              "frobnicate");
    EXPECT_EQ(outcome(R"({"prompt": "x", "messages": []})", Endpoint::Completions), "messages");
    EXPECT_EQ(outcome(R"({"prompt": "x", "max_completion_tokens": 3})", Endpoint::Completions),
              "max_completion_tokens");
    EXPECT_EQ(outcome(R"({"messages": [{"role": "user", "content": "x"}], "prompt": "y"})", Endpoint::Chat), "prompt");
    EXPECT_EQ(outcome(R"({"messages": [{"role": "user", "content": "x", "colour": "red"}]})", Endpoint::Chat),
              "messages[0].colour");
    EXPECT_EQ(outcome(R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": true, "x": 1}})",
                      Endpoint::Completions),
              "stream_options.x");
    EXPECT_EQ(outcome(R"({"prompt": "x", "stream": true, "stream_options": {"include_obfuscation": true}})",
                      Endpoint::Completions),
              "");
    // null is "not given", known or not.
    EXPECT_EQ(outcome(R"({"prompt": "x", "whatever": null, "audio": null})", Endpoint::Completions), "");
    try {
        parse_completion_request(R"({"prompt": "x", "temprature": 0})", kLimits);
    } catch (const ApiError& err) {
        EXPECT_EQ(err.code().value_or(""), "unknown_parameter");
        EXPECT_NE(std::string(err.what()).find("temprature"), std::string::npos);
    }
}

// The rows of the markdown table under `heading` whose first column is `first_column`.
std::set<Row> doc_rows(const std::string& doc, const std::string& heading, const std::string& first_column) {
    std::set<Row> rows;
    const std::size_t start = doc.find("\n" + heading + "\n");
    EXPECT_NE(start, std::string::npos) << heading;
    const std::size_t end = doc.find("\n## ", start + 1);
    std::istringstream section(doc.substr(start, end - start));
    const std::regex row(R"(^\| `([a-z_]+)` \| (both|completions|chat) \| (honoured|refused|ignored) \|.*)");
    bool in_table = false;
    for (std::string line; std::getline(section, line);) {
        if (line.starts_with("| " + first_column + " |")) {
            in_table = true;
        } else if (!line.starts_with("|")) {
            in_table = false;
        }
        std::smatch m;
        if (in_table && std::regex_match(line, m, row)) {
            if (m[2] == "both") {
                rows.emplace(m[1], "completions", m[3]);
                rows.emplace(m[1], "chat", m[3]);
            } else {
                rows.emplace(m[1], m[2], m[3]);
            }
        }
    }
    return rows;
}

std::set<Row> code_rows(std::span<const RequestField> fields) {
    std::set<Row> rows;
    for (const RequestField& f : fields) {
        for (const auto& [on, endpoint] : {std::pair{f.completions, "completions"}, std::pair{f.chat, "chat"}}) {
            if (on) {
                rows.emplace(std::string(f.name), endpoint, std::string(field_use_name(f.use)));
            }
        }
    }
    return rows;
}

TEST(RequestFieldTable, DocsListExactlyTheCodesRows) {
    std::ifstream in(VKF_SERVER_DOC);
    ASSERT_TRUE(in) << VKF_SERVER_DOC;
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(doc_rows(text.str(), "## Request fields", "field"), code_rows(request_fields()));
    EXPECT_EQ(doc_rows(text.str(), "## Request fields", "message field"), code_rows(message_fields()));
}

}  // namespace
}  // namespace vkf::serve
