#include "host/text/tokenizer_json.hpp"

#include "host/text/bert_normalizer.hpp"
#include "host/text/bpe_model.hpp"
#include "host/text/utf8.hpp"
#include "host/text/wordpiece_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

namespace vkf::text {
namespace {

// "'Unigram' is not supported (only BPE)"
[[noreturn]] void refuse_type(const JsonValue& type, std::string_view supported) {
    type.fail("'" + type.as_string() + "' is not supported (" + std::string(supported) + ")");
}

// A boolean that Hugging Face defaults when it is absent or null.
bool flag(const JsonValue& object, std::string_view key, bool fallback) {
    const JsonValue* value = object.find(key);
    return value == nullptr || value->is_null() ? fallback : value->as_bool();
}

// A string that may be absent or null.
std::optional<std::string> optional_string(const JsonValue& object, std::string_view key) {
    const JsonValue* value = object.find(key);
    if (value == nullptr || value->is_null()) {
        return std::nullopt;
    }
    return value->as_string();
}

// {"String": "literal"} or {"Regex": "pattern"} (Hugging Face's Split and Replace patterns).
Regex parse_pattern(const JsonValue& pattern) {
    if (pattern.as_object().size() != 1) {
        pattern.fail("expected one of {\"String\": ...} or {\"Regex\": ...}");
    }
    const JsonMember& member = pattern.as_object()[0];
    if (member.key == "String") {
        return Regex::literal(member.value.as_string(), member.value.location());
    }
    if (member.key == "Regex") {
        return Regex::from_oniguruma(member.value.as_string(), member.value.location());
    }
    pattern.fail("expected one of {\"String\": ...} or {\"Regex\": ...}, got key '" + member.key + "'");
}

SplitBehavior parse_behavior(const JsonValue& value) {
    const std::optional<SplitBehavior> behavior = parse_split_behavior(value.as_string());
    if (!behavior) {
        value.fail("'" + value.as_string() +
                   "' is not a split behavior (Removed, Isolated, MergedWithPrevious, MergedWithNext or "
                   "Contiguous)");
    }
    return *behavior;
}

// The components of a Sequence's list, each read by `parse`.
template <class Parse>
auto parse_each(const JsonValue& list, Parse parse) {
    std::vector<decltype(parse(list))> components;
    for (const JsonValue& element : list.as_array()) {
        components.push_back(parse(element));
    }
    return components;
}

// --- normalizers ---

std::unique_ptr<Normalizer> parse_normalizer(const JsonValue& v) {
    const JsonValue& type = v.at("type");
    const std::string& name = type.as_string();
    if (name == "NFC") {
        return make_unicode_normalizer(NormalForm::NFC);
    }
    if (name == "NFD") {
        return make_unicode_normalizer(NormalForm::NFD);
    }
    if (name == "NFKC") {
        return make_unicode_normalizer(NormalForm::NFKC);
    }
    if (name == "NFKD") {
        return make_unicode_normalizer(NormalForm::NFKD);
    }
    if (name == "Lowercase") {
        return make_lowercase_normalizer();
    }
    if (name == "Strip") {
        return make_strip_normalizer(v.at("strip_left").as_bool(), v.at("strip_right").as_bool());
    }
    if (name == "Prepend") {
        return make_prepend_normalizer(v.at("prepend").as_string());
    }
    if (name == "Replace") {
        return make_replace_normalizer(parse_pattern(v.at("pattern")), v.at("content").as_string());
    }
    if (name == "ByteLevel") {
        return make_byte_level_normalizer();
    }
    if (name == "BertNormalizer") {
        // Hugging Face requires all but strip_accents, whose absence or null follows lowercase.
        const bool lowercase = v.at("lowercase").as_bool();
        return make_bert_normalizer({
            .clean_text = v.at("clean_text").as_bool(),
            .handle_chinese_chars = v.at("handle_chinese_chars").as_bool(),
            .strip_accents = flag(v, "strip_accents", lowercase),
            .lowercase = lowercase,
        });
    }
    if (name == "Sequence") {
        return make_sequence_normalizer(parse_each(v.at("normalizers"), parse_normalizer));
    }
    refuse_type(type,
                "supported normalizers: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace, "
                "ByteLevel, BertNormalizer, Sequence");
}

// --- pre-tokenizers ---

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const JsonValue& v) {
    const JsonValue& type = v.at("type");
    const std::string& name = type.as_string();
    if (name == "ByteLevel") {
        return make_byte_level_pre_tokenizer(v.at("add_prefix_space").as_bool(), flag(v, "use_regex", true));
    }
    if (name == "Split") {
        return make_split_pre_tokenizer(parse_pattern(v.at("pattern")), parse_behavior(v.at("behavior")),
                                        v.at("invert").as_bool());
    }
    if (name == "Digits") {
        return make_digits_pre_tokenizer(flag(v, "individual_digits", false));
    }
    if (name == "Punctuation") {
        const JsonValue* behavior = v.find("behavior");
        return make_punctuation_pre_tokenizer(behavior ? parse_behavior(*behavior) : SplitBehavior::Isolated);
    }
    if (name == "Whitespace") {
        return make_whitespace_pre_tokenizer();
    }
    if (name == "WhitespaceSplit") {
        return make_whitespace_split_pre_tokenizer();
    }
    if (name == "BertPreTokenizer") {
        return make_bert_pre_tokenizer();
    }
    if (name == "Sequence") {
        return make_sequence_pre_tokenizer(parse_each(v.at("pretokenizers"), parse_pre_tokenizer));
    }
    refuse_type(type,
                "supported pre-tokenizers: ByteLevel, Split, Digits, Punctuation, Whitespace, "
                "WhitespaceSplit, BertPreTokenizer, Sequence");
}

// --- the models ---

// model.vocab: each id given to one token; tokens[id] is its string. The ids need not be
// contiguous (Hugging Face maps them without requiring it, and vocabularies converted from
// other formats skip some): an unused id's string is empty. The largest id is bounded by the
// entry count, so that a hostile file cannot make a table of billions of gaps.
std::vector<std::string> parse_vocab(const JsonValue& vocab) {
    const std::size_t n = vocab.size();
    const std::size_t limit = std::max<std::size_t>(8 * n, std::size_t{1} << 20);
    std::size_t size = 0;
    for (const JsonMember& member : vocab.as_object()) {
        const auto id = member.value.as_integer<TokenId>();
        if (id >= limit) {
            member.value.fail("id " + fmt::to_string(id) + " is out of range: " + fmt::to_string(n) +
                              " tokens may leave gaps in their ids, but the largest must be below " +
                              fmt::to_string(limit));
        }
        if (member.key.empty()) {
            member.value.fail("the empty string is not a token");
        }
        size = std::max<std::size_t>(size, std::size_t{id} + 1);
    }
    std::vector<std::string> tokens(size);
    std::vector<const JsonMember*> owner(size, nullptr);
    for (const JsonMember& member : vocab.as_object()) {
        const auto id = member.value.as_integer<TokenId>();
        if (owner[id] != nullptr) {
            member.value.fail("id " + fmt::to_string(id) + " is also the id of '" + owner[id]->key + "'");
        }
        owner[id] = &member;
        tokens[id] = member.key;
    }
    return tokens;
}

std::unique_ptr<Model> parse_wordpiece_model(const JsonValue& v) {
    // Hugging Face requires all four.
    std::vector<std::string> tokens = parse_vocab(v.at("vocab"));
    const JsonValue& unk = v.at("unk_token");
    WordPieceOptions options{
        .continuing_subword_prefix = v.at("continuing_subword_prefix").as_string(),
        .max_input_chars_per_word = v.at("max_input_chars_per_word").as_integer<std::size_t>(),
    };
    // Hugging Face only fails when a piece needs the unk token; a tokenizer that cannot encode
    // every text is refused here instead.
    const auto it = std::find(tokens.begin(), tokens.end(), unk.as_string());
    if (it == tokens.end()) {
        unk.fail("unk_token '" + unk.as_string() + "' is not in model.vocab");
    }
    options.unk = static_cast<TokenId>(it - tokens.begin());
    return std::make_unique<WordPieceModel>(std::move(tokens), std::move(options));
}

std::unique_ptr<Model> parse_bpe_model(const JsonValue& v) {
    if (const JsonValue* dropout = v.find("dropout"); dropout != nullptr && !dropout->is_null()) {
        if (dropout->as_double() != 0.0) {
            dropout->fail("dropout " + fmt::format("{:f}", dropout->as_double()) +
                          " is not supported (it makes encoding random); only null or 0");
        }
    }
    auto model = std::make_unique<BpeModel>(parse_vocab(v.at("vocab")));
    const auto require_token = [&](const JsonValue& where, const std::string& token, std::string_view what) {
        const std::optional<TokenId> id = model->find(token);
        if (!id) {
            where.fail(std::string(what) + "'" + token + "' is not in model.vocab");
        }
        return *id;
    };

    BpeOptions options;
    if (const std::optional<std::string> unk = optional_string(v, "unk_token")) {
        options.unk = require_token(v.at("unk_token"), *unk, "unk_token ");
    }
    options.continuing_subword_prefix = optional_string(v, "continuing_subword_prefix").value_or("");
    options.end_of_word_suffix = optional_string(v, "end_of_word_suffix").value_or("");
    options.fuse_unk = flag(v, "fuse_unk", false);
    options.byte_fallback = flag(v, "byte_fallback", false);
    options.ignore_merges = flag(v, "ignore_merges", false);

    // Merges, "a b" or ["a", "b"], ranked by their order; a + b without b's continuing prefix
    // must be a token too.
    const std::size_t prefix = options.continuing_subword_prefix.size();
    const JsonValue& merges = v.at("merges");
    model->reserve_merges(merges.size());
    for (const JsonValue& merge : merges.as_array()) {
        std::string left;
        std::string right;
        if (merge.is_string()) {
            const std::string& text = merge.as_string();
            const std::size_t space = text.find(' ');
            if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
                merge.fail("'" + text + "' is not two tokens separated by one space");
            }
            left = text.substr(0, space);
            right = text.substr(space + 1);
        } else if (merge.is_array() && merge.size() == 2) {
            left = merge.at(std::size_t{0}).as_string();
            right = merge.at(std::size_t{1}).as_string();
        } else {
            merge.fail("expected \"a b\" or [\"a\", \"b\"]");
        }
        const TokenId left_id = require_token(merge, left, "");
        const TokenId right_id = require_token(merge, right, "");
        if (right.size() < prefix ||
            (right.size() > prefix && (static_cast<unsigned char>(right[prefix]) & 0xC0) == 0x80)) {
            merge.fail("'" + right + "' does not start with the continuing_subword_prefix '" +
                       options.continuing_subword_prefix + "'");
        }
        const std::string merged = left + right.substr(prefix);
        model->add_merge(left_id, right_id, require_token(merge, merged, "the merged token "));
    }
    model->set_options(std::move(options));
    return model;
}

std::unique_ptr<Model> parse_model(const JsonValue& v) {
    const JsonValue& type = v.at("type");
    if (type.as_string() == "BPE") {
        return parse_bpe_model(v);
    }
    if (type.as_string() == "WordPiece") {
        return parse_wordpiece_model(v);
    }
    refuse_type(type, "only BPE and WordPiece");
}

// --- added tokens ---

void parse_added_tokens(const JsonValue* list, const Normalizer* normalizer, TokenizerParts& parts) {
    std::vector<AddedToken> tokens;
    // Hugging Face numbers added tokens from its vocabulary's entry count, gaps or not.
    const std::size_t model_size = parts.model->entries();
    std::optional<TokenId> max_id;
    if (list != nullptr && !list->is_null()) {
        for (const JsonValue& entry : list->as_array()) {
            AddedToken token{
                .content = entry.at("content").as_string(),
                .id = entry.at("id").as_integer<TokenId>(),
                .single_word = entry.at("single_word").as_bool(),
                .lstrip = entry.at("lstrip").as_bool(),
                .rstrip = entry.at("rstrip").as_bool(),
                .normalized = entry.at("normalized").as_bool(),
                .special = entry.at("special").as_bool(),
            };
            if (token.content.empty()) {
                entry.at("content").fail("an added token's content must not be empty");
            }
            if (parts.added_by_content.contains(token.content)) {
                entry.at("content").fail("'" + token.content + "' is an added token already");
            }
            // The id Hugging Face gives it (AddedVocabulary::add_tokens): its vocabulary id, or the
            // first id after the vocabulary and the added tokens before it.
            TokenId expected = 0;
            std::string why;
            if (const std::optional<TokenId> in_vocab = parts.model->find(token.content)) {
                expected = *in_vocab;
                why = "its id in model.vocab";
            } else {
                expected = !max_id ? static_cast<TokenId>(model_size)
                                   : (*max_id >= model_size || model_size == 0 ? *max_id + 1
                                                                               : static_cast<TokenId>(model_size));
                why = "the next id after model.vocab and the added tokens before it";
            }
            if (token.id != expected) {
                entry.at("id").fail("'" + token.content + "' has id " + fmt::to_string(token.id) +
                                    ", but Hugging Face gives it " + fmt::to_string(expected) + " (" + why + ")");
            }
            max_id = std::max(max_id.value_or(0), token.id);
            if (token.special) {
                parts.special_contents.insert(token.content);
            }
            parts.added_by_content.emplace(token.content, token.id);
            parts.added_by_id.emplace(token.id, tokens.size());
            tokens.push_back(std::move(token));
        }
    }
    parts.vocab_size = std::max<std::size_t>(parts.model->size(), max_id ? *max_id + std::size_t{1} : 0);
    parts.added = AddedVocabulary(std::move(tokens), normalizer);
}

// --- post-processors ---

TokenId special_id(const JsonValue& value, std::size_t vocab_size) {
    const auto id = value.as_integer<TokenId>();
    if (id >= vocab_size) {
        value.fail("id " + fmt::to_string(id) + " is out of range for a vocabulary of " + fmt::to_string(vocab_size) +
                   " tokens");
    }
    return id;
}

// BertProcessing's and RobertaProcessing's ["[CLS]", 101].
TokenId named_special(const JsonValue& pair, std::size_t vocab_size) {
    if (pair.size() != 2) {
        pair.fail("expected [\"token\", id]");
    }
    pair.at(std::size_t{0}).as_string();
    return special_id(pair.at(std::size_t{1}), vocab_size);
}

std::unique_ptr<PostProcessor> parse_post_processor(const JsonValue& v, std::size_t vocab_size) {
    const JsonValue& type = v.at("type");
    const std::string& name = type.as_string();
    if (name == "ByteLevel") {
        return make_identity_post_processor();
    }
    if (name == "BertProcessing" || name == "RobertaProcessing") {
        return make_cls_sep_post_processor(named_special(v.at("cls"), vocab_size),
                                           named_special(v.at("sep"), vocab_size));
    }
    if (name == "TemplateProcessing") {
        const JsonValue& specials = v.at("special_tokens");
        specials.as_object();
        std::vector<TemplatePiece> single;
        for (const JsonValue& piece : v.at("single").as_array()) {
            if (piece.as_object().size() != 1) {
                piece.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
            }
            const JsonMember& member = piece.as_object()[0];
            if (member.key == "Sequence") {
                const JsonValue& id = member.value.at("id");
                if (id.as_string() != "A") {
                    id.fail("the single template can only hold sequence A, not '" + id.as_string() + "'");
                }
                single.push_back({.is_text = true});
            } else if (member.key == "SpecialToken") {
                const JsonValue& id = member.value.at("id");
                const JsonValue* special = specials.find(id.as_string());
                if (special == nullptr) {
                    id.fail("'" + id.as_string() + "' is not in special_tokens");
                }
                const JsonValue& ids = special->at("ids");
                if (ids.size() != special->at("tokens").size()) {
                    ids.fail("ids and tokens differ in length");
                }
                TemplatePiece token_piece;
                for (const JsonValue& element : ids.as_array()) {
                    token_piece.special_ids.push_back(special_id(element, vocab_size));
                }
                single.push_back(std::move(token_piece));
            } else {
                piece.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}, got key '" + member.key + "'");
            }
        }
        return make_template_post_processor(std::move(single));
    }
    if (name == "Sequence") {
        return make_sequence_post_processor(parse_each(v.at("processors"), [vocab_size](const JsonValue& element) {
            return parse_post_processor(element, vocab_size);
        }));
    }
    refuse_type(type,
                "supported post-processors: ByteLevel, TemplateProcessing, BertProcessing, "
                "RobertaProcessing, Sequence");
}

// --- decoders ---

std::unique_ptr<Decoder> parse_decoder(const JsonValue& v) {
    const JsonValue& type = v.at("type");
    const std::string& name = type.as_string();
    if (name == "ByteLevel") {
        return make_byte_level_decoder();
    }
    if (name == "Replace") {
        const JsonValue& pattern = v.at("pattern");
        const JsonValue* literal = pattern.find("String");
        if (literal == nullptr || pattern.size() != 1) {
            pattern.fail("only {\"String\": ...} patterns are supported in a Replace decoder");
        }
        if (literal->as_string().empty()) {
            literal->fail("an empty pattern is not supported");
        }
        return make_replace_decoder(literal->as_string(), v.at("content").as_string());
    }
    if (name == "Strip") {
        const JsonValue& content = v.at("content");
        const std::string& c = content.as_string();
        if (c.empty() || utf8_char(c, 0).size != c.size()) {
            content.fail("expected one character, got '" + c + "'");
        }
        return make_strip_decoder(c, v.at("start").as_integer<std::size_t>(), v.at("stop").as_integer<std::size_t>());
    }
    if (name == "Fuse") {
        return make_fuse_decoder();
    }
    if (name == "WordPiece") {
        // Hugging Face requires both.
        return make_wordpiece_decoder(v.at("prefix").as_string(), v.at("cleanup").as_bool());
    }
    if (name == "Sequence") {
        return make_sequence_decoder(parse_each(v.at("decoders"), parse_decoder));
    }
    refuse_type(type, "supported decoders: ByteLevel, Replace, Strip, Fuse, WordPiece, Sequence");
}

// A component that may be absent or null.
const JsonValue* component(const JsonValue& document, std::string_view key) {
    const JsonValue* value = document.find(key);
    return value == nullptr || value->is_null() ? nullptr : value;
}

}  // namespace

TokenizerParts parse_tokenizer_json(const JsonValue& document) {
    document.as_object();
    if (const JsonValue* version = document.find("version"); version != nullptr && version->as_string() != "1.0") {
        version->fail("version '" + version->as_string() + "' is not known (only 1.0)");
    }
    // Truncation would cut the ids of a long text, and padding to a fixed length or a multiple
    // would add some; neither is implemented. Padding to the longest text of a batch leaves a
    // single text as it is (BLOOM's tokenizer.json asks for it).
    if (const JsonValue* truncation = component(document, "truncation")) {
        truncation->fail("only null is supported (vkformer does not truncate)");
    }
    if (const JsonValue* padding = component(document, "padding")) {
        const JsonValue& strategy = padding->at("strategy");
        const JsonValue* multiple = padding->find("pad_to_multiple_of");
        if (!strategy.is_string() || strategy.as_string() != "BatchLongest" ||
            (multiple != nullptr && !multiple->is_null())) {
            padding->fail("only null or BatchLongest without pad_to_multiple_of is supported (vkformer does not pad)");
        }
    }
    TokenizerParts parts;
    parts.model = parse_model(document.at("model"));
    if (const JsonValue* v = component(document, "normalizer")) {
        parts.normalizer = parse_normalizer(*v);
    }
    if (const JsonValue* v = component(document, "pre_tokenizer")) {
        parts.pre_tokenizer = parse_pre_tokenizer(*v);
    }
    parse_added_tokens(document.find("added_tokens"), parts.normalizer.get(), parts);
    if (const JsonValue* v = component(document, "post_processor")) {
        parts.post_processor = parse_post_processor(*v, parts.vocab_size);
    }
    if (const JsonValue* v = component(document, "decoder")) {
        parts.decoder = parse_decoder(*v);
    }
    return parts;
}

}  // namespace vkf::text
