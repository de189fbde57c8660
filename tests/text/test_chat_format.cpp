// Chat formats: prompts written by hand from the models' own sources (the chat_template of
// mosaicml/mpt-30b-chat, Jais-13b-chat's model card, Baichuan's build_chat_input), detection from
// sample config files (tests/text/data/chat), errors, and (ChatFormatJinja, run by
// chat_template_render.mjs) the real MPT templates rendered by Hugging Face's @huggingface/jinja.

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/text/chat_format.hpp"
#include "host/text/tokenizer.hpp"
#include "tests/io/gguf_test_writer.hpp"
#include "tests/support/test_support.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace vkf::text {
namespace {

namespace fs = std::filesystem;
using Messages = std::vector<ChatMessage>;
using Ids = std::vector<TokenId>;
using test::error_message;

const fs::path kData = fs::path(VKF_TEXT_DATA) / "chat";
const std::string kMptSystem =
    "A conversation between a user and an LLM-based AI assistant. The assistant gives helpful and honest answers.";

ChatMessage sys(std::string c) {
    return {"system", std::move(c)};
}
ChatMessage user(std::string c) {
    return {"user", std::move(c)};
}
ChatMessage bot(std::string c) {
    return {"assistant", std::move(c)};
}

TEST(ChatFormat, NamesRoundTrip) {
    for (ChatFormat f : {ChatFormat::None, ChatFormat::ChatMl, ChatFormat::Baichuan, ChatFormat::Jais}) {
        EXPECT_EQ(parse_chat_format(to_string(f)), f);
    }
    EXPECT_EQ(parse_chat_format("chatml"), ChatFormat::ChatMl);
    EXPECT_EQ(parse_chat_format("baichuan"), ChatFormat::Baichuan);
    EXPECT_EQ(parse_chat_format("jais"), ChatFormat::Jais);
    EXPECT_EQ(parse_chat_format("none"), ChatFormat::None);
    for (const char* bad : {"", "ChatML", "chat-ml", "llama2", "jais ", "baichuan2"}) {
        EXPECT_EQ(parse_chat_format(bad), std::nullopt) << bad;
    }
}

// The chat_template of mosaicml/mpt-30b-chat: the default system prompt, a system block closed by
// "\n" alone, turns joined by "\n", the assistant header after the last message.
TEST(ChatFormat, ChatMlByHand) {
    EXPECT_EQ(render_chat(ChatFormat::ChatMl, Messages{user("Hello")}),
              "<|im_start|>system\n" + kMptSystem + "\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(render_chat(ChatFormat::ChatMl, Messages{sys("Be terse."), user("Hi")}),
              "<|im_start|>system\nBe terse.\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(render_chat(ChatFormat::ChatMl, Messages{sys("S"), user("a"), bot("b"), user("c")}),
              "<|im_start|>system\nS\n<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n"
              "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n");
    // The system prompt is stripped as Python's str.strip does (U+0085 and U+001C count, U+FEFF
    // does not); the messages are not.
    EXPECT_EQ(render_chat(ChatFormat::ChatMl, Messages{sys("\x1c \u0085\u3000 S \t\n\u2029"), user(" u \n")}),
              "<|im_start|>system\nS\n<|im_start|>user\n u \n<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(render_chat(ChatFormat::ChatMl, Messages{sys("\ufeffS"), user("u")}),
              "<|im_start|>system\n\ufeffS\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n");
    // A conversation that starts with the assistant still gets the default system prompt; a
    // later system message is an ordinary turn.
    EXPECT_EQ(render_chat(ChatFormat::ChatMl, Messages{bot("Hi!"), user("x"), sys("later")}),
              "<|im_start|>system\n" + kMptSystem +
                  "\n<|im_start|>assistant\nHi!<|im_end|>\n<|im_start|>user\nx<|im_end|>\n"
                  "<|im_start|>system\nlater<|im_end|>\n<|im_start|>assistant\n");
    // An empty system message is kept (empty), not replaced by the default.
    EXPECT_EQ(render_chat(ChatFormat::ChatMl, Messages{sys(""), user("x")}),
              "<|im_start|>system\n\n<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
}

// Jais-13b-chat's model card: prompt_eng.format_map({'Question': ...}) with the card's question.
TEST(ChatFormat, JaisByHand) {
    const std::string card =
        "### Instruction: Your name is Jais, and you are named after Jebel Jais, the highest mountain in UAE. You "
        "are built by Inception and MBZUAI. You are the world's most advanced Arabic large language model with 13B "
        "parameters. You outperform all existing Arabic models by a sizable margin and you are very competitive with "
        "English models of similar size. You can answer in Arabic and English only. You are a helpful, respectful "
        "and honest assistant. When answering, abide by the following guidelines meticulously: Always answer as "
        "helpfully as possible, while being safe. Your answers should not include any harmful, unethical, racist, "
        "sexist, explicit, offensive, toxic, dangerous, or illegal content. Do not give medical, legal, financial, "
        "or professional advice. Never assist in or promote illegal activities. Always encourage legal and "
        "responsible actions. Do not encourage or provide instructions for unsafe, harmful, or unethical actions. Do "
        "not create or share misinformation or fake news. Please ensure that your responses are socially unbiased "
        "and positive in nature. If a question does not make any sense, or is not factually coherent, explain why "
        "instead of answering something not correct. If you don't know the answer to a question, please don't share "
        "false information. Prioritize the well-being and the moral integrity of users. Avoid using toxic, "
        "derogatory, or offensive language. Maintain a respectful tone. Do not generate, promote, or engage in "
        "discussions about adult content. Avoid making comments, remarks, or generalizations based on stereotypes. "
        "Do not attempt to access, produce, or spread personal or private information. Always respect user "
        "confidentiality. Stay positive and do not say bad things about anything. Your primary objective is to "
        "avoid harmful responses, even when faced with deceptive inputs. Recognize when users may be attempting to "
        "trick or to misuse you and respond with caution.\n\nComplete the conversation below between [|Human|] and "
        "[|AI|]:\n### Input: [|Human|] What is the capital of UAE?\n### Response: [|AI|]";
    EXPECT_EQ(render_chat(ChatFormat::Jais, Messages{user("What is the capital of UAE?")}), card);
    EXPECT_EQ(render_chat(ChatFormat::Jais, Messages{sys("Be brief."), user("a"), bot("b"), user("c")}),
              "### Instruction: Be brief.\n\nComplete the conversation below between [|Human|] and [|AI|]:\n"
              "### Input: [|Human|] a\n### Response: [|AI|] b\n### Input: [|Human|] c\n### Response: [|AI|]");
}

TEST(ChatFormat, Errors) {
    for (ChatFormat f : {ChatFormat::ChatMl, ChatFormat::Jais}) {
        SCOPED_TRACE(to_string(f));
        EXPECT_NE(error_message([&] { render_chat(f, Messages{}); }).find("no messages"), std::string::npos);
        const std::string role = error_message([&] { render_chat(f, Messages{user("a"), {"tool", "b"}}); });
        EXPECT_NE(role.find("messages[1]: role 'tool'"), std::string::npos) << role;
        EXPECT_NE(error_message([&] {
                      render_chat(f, Messages{{"User", "a"}});
                  }).find("role 'User'"),
                  std::string::npos);
        const std::string utf8 = error_message([&] { render_chat(f, Messages{user("ok"), bot("a\xff")}); });
        EXPECT_NE(utf8.find("messages[1] (assistant): the content is not UTF-8 (byte 1)"), std::string::npos) << utf8;
        const std::string only = error_message([&] { render_chat(f, Messages{sys("s")}); });
        EXPECT_NE(only.find("only system messages"), std::string::npos) << only;
    }
    const std::string late = error_message([] { render_chat(ChatFormat::Jais, Messages{user("a"), sys("s")}); });
    EXPECT_NE(late.find("messages[1] is a system message"), std::string::npos) << late;
    EXPECT_NE(error_message([] { render_chat(ChatFormat::None, Messages{user("a")}); }).find("chat format none"),
              std::string::npos);
    EXPECT_NE(error_message([] { render_chat(ChatFormat::Baichuan, Messages{user("a")}); }).find("render_chat_ids"),
              std::string::npos);
}

TEST(ChatFormat, StopStrings) {
    EXPECT_EQ(chat_stop_strings(ChatFormat::ChatMl), (std::vector<std::string>{"<|im_end|>"}));
    EXPECT_EQ(chat_stop_strings(ChatFormat::Jais), (std::vector<std::string>{"\n### Input:", "[|Human|]"}));
    EXPECT_EQ(chat_stop_strings(ChatFormat::Baichuan), (std::vector<std::string>{"<reserved_102>", "<reserved_106>"}));
    EXPECT_TRUE(chat_stop_strings(ChatFormat::None).empty());
}

void write(const fs::path& file, const std::string& text) {
    std::ofstream(file, std::ios::binary) << text;
}

TEST(ChatFormat, DetectsTheSampleCheckpoints) {
    EXPECT_EQ(detect_chat_format(kData / "baichuan2-13b-chat"), ChatFormat::Baichuan);
    EXPECT_EQ(detect_chat_format(kData / "baichuan-13b-chat"), ChatFormat::Baichuan);
    EXPECT_EQ(detect_chat_format(kData / "jais-13b-chat"), ChatFormat::Jais);
    for (const char* mpt : {"mpt-7b-chat", "mpt-30b-chat"}) {
        test::TempDir dir("vkf_chat_");
        fs::copy_file(kData / (std::string(mpt) + ".tokenizer_config.json"), dir.path() / "tokenizer_config.json");
        EXPECT_EQ(detect_chat_format(dir.path()), ChatFormat::ChatMl) << mpt;
    }
}

TEST(ChatFormat, DetectsOtherwise) {
    test::TempDir dir("vkf_chat_");
    EXPECT_EQ(detect_chat_format(dir.path()), ChatFormat::None);  // no files
    EXPECT_EQ(detect_chat_format(dir.path() / "missing"), ChatFormat::None);
    // MPT-7B (the base model): a tokenizer_config.json without a template, config.json of MPT.
    write(dir.path() / "tokenizer_config.json",
          R"({"tokenizer_class": "GPTNeoXTokenizer", "eos_token": "<|endoftext|>"})");
    write(dir.path() / "config.json", R"({"model_type": "mpt", "architectures": ["MPTForCausalLM"]})");
    write(dir.path() / "generation_config.json", R"({"eos_token_id": 0, "user_token_id": 195})");  // only one of two
    EXPECT_EQ(detect_chat_format(dir.path()), ChatFormat::None);
    // A list of named templates, as newer tokenizer_config.json files have.
    write(dir.path() / "tokenizer_config.json",
          R"({"chat_template": [{"name": "default", "template": "{{ '<|im_start|>' + m + '<|im_end|>' }}"}]})");
    EXPECT_EQ(detect_chat_format(dir.path()), ChatFormat::ChatMl);
    write(dir.path() / "tokenizer_config.json",
          R"({"chat_template": "{{ '### Input: [|Human|] ' + q + ' [|AI|]' }}"})");
    EXPECT_EQ(detect_chat_format(dir.path()), ChatFormat::Jais);
    // A template that is neither (Llama 2's) says nothing; the architecture still does.
    write(dir.path() / "tokenizer_config.json", R"({"chat_template": "{{ bos_token + '[INST] ' }}"})");
    EXPECT_EQ(detect_chat_format(dir.path()), ChatFormat::None);
    write(dir.path() / "config.json", R"({"architectures": ["JAISLMHeadModel"]})");
    EXPECT_EQ(detect_chat_format(dir.path()), ChatFormat::Jais);
    // A file that is there but broken is an error naming it, not a silent None.
    write(dir.path() / "generation_config.json", "{\"user_token_id\": 195,");
    const std::string broken = error_message([&] { detect_chat_format(dir.path()); });
    EXPECT_NE(broken.find("generation_config.json"), std::string::npos) << broken;
}

// A GGUF file's tokenizer.chat_template (llama.cpp's converter copies tokenizer_config.json's).
TEST(ChatFormat, DetectsGgufTemplates) {
    test::TempDir dir("vkf_chat_");
    const auto gguf = [&](const std::string& name, const std::string* chat_template) {
        test::GgufBytes g;
        g.header(0, chat_template != nullptr ? 2 : 1).kv_str("general.architecture", "bloom");
        if (chat_template != nullptr) {
            g.kv_str("tokenizer.chat_template", *chat_template);
        }
        const fs::path path = dir.path() / name;
        write(path, g.bytes());
        return path;
    };
    EXPECT_EQ(detect_chat_format(gguf("none.gguf", nullptr)), ChatFormat::None);
    const std::string chatml = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}";
    EXPECT_EQ(detect_chat_format(gguf("chatml.gguf", &chatml)), ChatFormat::ChatMl);
    const std::string jais = "### Input: [|Human|] {{ q }}\n### Response: [|AI|]";
    EXPECT_EQ(detect_chat_format(gguf("jais.gguf", &jais)), ChatFormat::Jais);
    const std::string llama = "{{ bos_token }}[INST] {{ messages[0]['content'] }} [/INST]";
    const std::string refused = error_message([&] { detect_chat_format(gguf("llama.gguf", &llama)); });
    EXPECT_NE(refused.find("llama.gguf"), std::string::npos) << refused;
    EXPECT_NE(refused.find("tokenizer.chat_template \"{{ bos_token }}[INST]"), std::string::npos) << refused;
    EXPECT_NE(refused.find("none of vkformer's chat formats"), std::string::npos) << refused;
}

// A tokenizer.json as converted from Baichuan's SentencePiece model, cut down: ids 0-2 <unk>, <s>,
// </s>; then one id per character from ' ' on; then <reserved_N> added tokens placed so that id 195
// is <reserved_`user`> (102 in Baichuan-13B's vocabulary, 106 in Baichuan2's).
// Characters past the last id before the reserved tokens (past u or y) are <unk>.
Tokenizer baichuan_tokenizer(int user, TokenId* first_char) {
    const int first_reserved = 195 - user;
    nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
    nlohmann::ordered_json added = nlohmann::ordered_json::array();
    const auto token = [&](const std::string& text, int id, bool is_added) {
        vocab[text] = id;
        if (is_added) {
            added.push_back({{"id", id},
                             {"content", text},
                             {"single_word", false},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"normalized", false},
                             {"special", true}});
        }
    };
    token("<unk>", 0, true);
    token("<s>", 1, true);
    token("</s>", 2, true);
    for (int id = 3; id < first_reserved; ++id) {
        token(std::string(1, static_cast<char>(' ' + id - 3)), id, false);
    }
    for (int n = 0; n <= user + 8; ++n) {
        token("<reserved_" + std::to_string(n) + ">", first_reserved + n, true);
    }
    *first_char = 3;
    const nlohmann::ordered_json doc = {{"version", "1.0"},
                                        {"truncation", nullptr},
                                        {"padding", nullptr},
                                        {"added_tokens", added},
                                        {"normalizer", nullptr},
                                        {"pre_tokenizer", nullptr},
                                        {"post_processor", nullptr},
                                        {"decoder", nullptr},
                                        {"model",
                                         {{"type", "BPE"},
                                          {"dropout", nullptr},
                                          {"unk_token", "<unk>"},
                                          {"continuing_subword_prefix", nullptr},
                                          {"end_of_word_suffix", nullptr},
                                          {"fuse_unk", true},
                                          {"byte_fallback", false},
                                          {"vocab", vocab},
                                          {"merges", nlohmann::ordered_json::array()}}}};
    return Tokenizer::parse(doc.dump(), "baichuan_tokenizer");
}

// The ids by hand from generation_utils.py's build_chat_input (Baichuan2-13B-Chat,
// https://huggingface.co/baichuan-inc/Baichuan2-13B-Chat/blob/main/generation_utils.py) and
// modeling_baichuan.py's _build_chat_input (Baichuan-13B-Chat,
// https://huggingface.co/baichuan-inc/Baichuan-13B-Chat/blob/main/modeling_baichuan.py).
TEST(ChatFormat, BaichuanIdsByHand) {
    TokenId c0 = 0;
    const Tokenizer v2 = baichuan_tokenizer(106, &c0);
    ASSERT_EQ(v2.token(195), "<reserved_106>");
    const auto ch = [&](char c) { return static_cast<TokenId>(c0 + (c - ' ')); };
    const Messages chat{sys("sq"), user("ab"), bot("c"), user("d e")};
    // Baichuan2: the system prompt's ids, then 195 + ids per user turn, 196 + ids per assistant turn, 196.
    EXPECT_EQ(render_chat_ids(ChatFormat::Baichuan, chat, v2),
              (Ids{ch('s'), ch('q'), 195, ch('a'), ch('b'), 196, ch('c'), 195, ch('d'), ch(' '), ch('e'), 196}));
    // Ending with the assistant's message: no 196 after it (the model continues it).
    EXPECT_EQ(render_chat_ids(ChatFormat::Baichuan, Messages{user("a"), bot("b")}, v2),
              (Ids{195, ch('a'), 196, ch('b')}));
    // Content that spells the markers is still one token each, as the converted tokenizer maps it.
    EXPECT_EQ(render_chat_ids(ChatFormat::Baichuan, Messages{user("<reserved_106>")}, v2), (Ids{195, 195, 196}));

    const Tokenizer v1 = baichuan_tokenizer(102, &c0);
    ASSERT_EQ(v1.token(196), "<reserved_103>");
    // Baichuan-13B-Chat: </s> (2) after each assistant turn, 196 at the end always, no system role.
    EXPECT_EQ(render_chat_ids(ChatFormat::Baichuan, Messages{user("ab"), bot("c"), user("d")}, v1),
              (Ids{195, ch('a'), ch('b'), 196, ch('c'), 2, 195, ch('d'), 196}));
    EXPECT_EQ(render_chat_ids(ChatFormat::Baichuan, Messages{user("a"), bot("b")}, v1),
              (Ids{195, ch('a'), 196, ch('b'), 2, 196}));
    const std::string system = error_message([&] { render_chat_ids(ChatFormat::Baichuan, chat, v1); });
    EXPECT_NE(system.find("Baichuan-13B-Chat has no place"), std::string::npos) << system;
    const std::string late = error_message([&] {
        render_chat_ids(ChatFormat::Baichuan, Messages{user("a"), sys("b")}, v2);
    });
    EXPECT_NE(late.find("messages[1] is a system message"), std::string::npos) << late;
    const std::string role = error_message([&] {
        render_chat_ids(ChatFormat::Baichuan, Messages{{"function", "a"}}, v2);
    });
    EXPECT_NE(role.find("role 'function'"), std::string::npos) << role;

    // A vocabulary that is not Baichuan's is refused by name.
    const Tokenizer other = Tokenizer::load(fs::path(VKF_TEXT_DATA) / "template_bos_eos.json");
    const std::string wrong = error_message([&] { render_chat_ids(ChatFormat::Baichuan, Messages{user("a")}, other); });
    EXPECT_NE(wrong.find("not a Baichuan chat vocabulary"), std::string::npos) << wrong;
}

TEST(ChatFormat, TextFormatIdsAreTheTokenizersIdsOfTheText) {
    // template_bos_eos.json adds <s> ... </s>: apply_chat_template leaves them out (MPT), the Jais
    // card's tokenizer(text) keeps them.
    const Tokenizer t = Tokenizer::load(fs::path(VKF_TEXT_DATA) / "template_bos_eos.json");
    const Messages chat{sys("Be brief."), user("Hello world"), bot("Hi"), user("and the world?")};
    EXPECT_EQ(render_chat_ids(ChatFormat::ChatMl, chat, t), t.encode(render_chat(ChatFormat::ChatMl, chat), false));
    EXPECT_EQ(render_chat_ids(ChatFormat::Jais, chat, t), t.encode(render_chat(ChatFormat::Jais, chat), true));
    EXPECT_NE(t.encode("x", true), t.encode("x", false));  // the two differ on this tokenizer
    EXPECT_NE(error_message([&] { render_chat_ids(ChatFormat::None, chat, t); }).find("chat format none"),
              std::string::npos);
}

// Run by chat_template_render.mjs with the renders of the real templates; skipped without them.
TEST(ChatFormatJinja, MatchesHuggingFaceJinja) {
    const char* renders_file = std::getenv("VKF_CHAT_RENDERS");
    if (renders_file == nullptr) {
        GTEST_SKIP() << "VKF_CHAT_RENDERS is not set (the chat_template_compare test sets it)";
    }
    const JsonValue renders = read_json_file(renders_file);
    std::size_t compared = 0, quirk = 0, left_out = 0;
    for (const JsonValue& entry : renders.as_array()) {
        const std::string& name = entry.at("template").as_string();
        Messages messages;
        std::size_t turns = 0;
        for (const JsonValue& m : entry.at("messages").as_array()) {
            messages.push_back({m.at("role").as_string(), m.at("content").as_string()});
            turns += messages.size() > 1 || messages.back().role != "system";
        }
        SCOPED_TRACE(name + " " + entry.at("messages").location());
        ASSERT_EQ(entry.find("error"), nullptr) << entry.at("error").as_string();
        const std::string& jinja = entry.at("text").as_string();
        const std::string ours = render_chat(ChatFormat::ChatMl, messages);
        if (messages[0].role == "system" && messages[0].content.empty()) {
            // Python's Jinja (transformers) keeps an empty system prompt: '' != false. JavaScript's
            // loose equality makes "" == false, so @huggingface/jinja drops the block. ChatMlByHand
            // checks Python's result.
            ++left_out;
            continue;
        }
        if (name == "mpt-7b-chat.tokenizer_config.json" && turns > 1) {
            // Its template writes the assistant header after every message, not only the last:
            // equal up to the end of the first message, and more headers than ours after it.
            const std::string end = "<|im_end|>", header = "<|im_start|>assistant\n";
            EXPECT_EQ(jinja.substr(0, jinja.find(end)), ours.substr(0, ours.find(end)));
            const auto count = [&](const std::string& text) {
                std::size_t n = 0;
                for (std::size_t at = text.find(header); at != std::string::npos; at = text.find(header, at + 1)) {
                    ++n;
                }
                return n;
            };
            EXPECT_GT(count(jinja), count(ours)) << "the template no longer repeats the header";
            ++quirk;
            continue;
        }
        EXPECT_EQ(ours, jinja);
        ++compared;
    }
    EXPECT_GT(compared, 10u);
    std::printf(
        "%zu renders equal byte for byte, %zu compared around mpt-7b-chat's repeated header, %zu left out "
        "(an empty system prompt)\n",
        compared, quirk, left_out);
}

}  // namespace
}  // namespace vkf::text
