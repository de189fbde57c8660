#include "host/text/tokenizer.hpp"

#include "base/error.hpp"
#include "host/io/json.hpp"
#include "host/text/tokenizer_json.hpp"
#include "host/text/utf8.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace vkf::text {

struct Tokenizer::Impl {
    std::string origin;
    TokenizerParts parts;
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::filesystem::path& file) {
    const JsonValue document = read_json_file(file);
    return Tokenizer(std::make_unique<Impl>(Impl{file.string(), parse_tokenizer_json(document)}));
}

Tokenizer Tokenizer::parse(std::string_view json, std::string_view origin) {
    const JsonValue document = parse_json(json, origin);
    return Tokenizer(std::make_unique<Impl>(Impl{std::string(origin), parse_tokenizer_json(document)}));
}

// Hugging Face's pipeline for one text: added tokens that match the raw text are taken out first;
// each stretch between them is normalized, the added tokens that match normalized text are taken
// out of it, and each stretch left is pre-tokenized into pieces the model encodes.
std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
    if (const std::size_t bad = find_invalid_utf8(text); bad != std::string_view::npos) {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[bad]));
        throw Error(impl_->origin + ": the text to encode is not valid UTF-8 (byte " + fmt::to_string(bad) + ", " +
                    byte + ")");
    }
    const TokenizerParts& p = impl_->parts;
    std::vector<TokenId> ids;
    std::vector<std::string> pieces;
    for (const AddedVocabulary::Stretch& raw : p.added.split(text, false)) {
        if (raw.id) {
            ids.push_back(*raw.id);
            continue;
        }
        if (raw.begin == raw.end) {
            continue;
        }
        const std::string_view raw_text = text.substr(raw.begin, raw.end - raw.begin);
        const std::string normalized = p.normalizer ? p.normalizer->normalize(raw_text) : std::string(raw_text);
        for (const AddedVocabulary::Stretch& stretch : p.added.split(normalized, true)) {
            if (stretch.id) {
                ids.push_back(*stretch.id);
                continue;
            }
            if (stretch.begin == stretch.end) {
                continue;
            }
            const std::string_view part =
                std::string_view(normalized).substr(stretch.begin, stretch.end - stretch.begin);
            pieces.clear();
            if (p.pre_tokenizer) {
                p.pre_tokenizer->pre_tokenize(part, pieces);
            } else {
                pieces.emplace_back(part);
            }
            for (const std::string& piece : pieces) {
                p.model->tokenize(piece, ids);
            }
        }
    }
    if (add_special_tokens && p.post_processor) {
        p.post_processor->process(ids);
    }
    return ids;
}

std::string Tokenizer::decode_bytes(std::span<const TokenId> ids, bool skip_special_tokens) const {
    const TokenizerParts& p = impl_->parts;
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (const TokenId id : ids) {
        const std::string_view t = token(id);
        if (!skip_special_tokens || !p.special_contents.contains(t)) {
            tokens.emplace_back(t);
        }
    }
    std::string text;
    if (p.decoder) {
        p.decoder->decode_chain(tokens);
        for (const std::string& t : tokens) {
            text += t;
        }
    } else {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            text += (i == 0 ? "" : " ") + tokens[i];
        }
    }
    return text;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
    return to_valid_utf8(decode_bytes(ids, skip_special_tokens));
}

std::string_view Tokenizer::token(TokenId id) const {
    const TokenizerParts& p = impl_->parts;
    if (const auto it = p.added_by_id.find(id); it != p.added_by_id.end()) {
        return p.added.decoded(it->second);
    }
    if (id >= p.model->size()) {
        throw Error(impl_->origin + ": token id " + fmt::to_string(id) + " is not in the vocabulary (" +
                    fmt::to_string(p.vocab_size) + " ids)");
    }
    const std::string_view t = p.model->token(id);
    if (t.empty()) {
        // A gap in model.vocab's ids (no token is empty): as much an error as an id past the
        // end, not a piece of no text.
        throw Error(
            fmt::format("{}: token id {} is not in the vocabulary: no token has that id, a gap below the "
                        "vocabulary's {} ids",
                        impl_->origin, id, p.vocab_size));
    }
    return t;
}

std::optional<TokenId> Tokenizer::find(std::string_view token) const {
    const TokenizerParts& p = impl_->parts;
    if (const auto it = p.added_by_content.find(token); it != p.added_by_content.end()) {
        return it->second;
    }
    return p.model->find(token);
}

std::size_t Tokenizer::vocab_size() const {
    return impl_->parts.vocab_size;
}

bool Tokenizer::is_special(TokenId id) const {
    const TokenizerParts& p = impl_->parts;
    const auto it = p.added_by_id.find(id);
    return it != p.added_by_id.end() && p.added.tokens()[it->second].special;
}

// --- TextStream ---
// ids_ holds the ids whose text is not all handed out, after one id of context whose text is:
// each push decodes ids_ without and with the new id, and the difference is the new text. Decoders
// that treat the start of the text apart (Strip) see the same start in both. pending_ holds the
// bytes of a character that has not arrived whole.

TextStream::TextStream(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_(skip_special_tokens) {}

std::string TextStream::push(TokenId id) {
    const std::string before = ids_.empty() ? std::string() : tokenizer_->decode_bytes(ids_, skip_special_);
    ids_.push_back(id);
    const std::string after = tokenizer_->decode_bytes(ids_, skip_special_);
    // The decoders here only extend the text when ids are added, except a Replace pattern spread
    // over two tokens: then what follows the common part is new.
    std::size_t common = 0;
    while (common < before.size() && common < after.size() && before[common] == after[common]) {
        ++common;
    }
    pending_.append(after, common);
    const std::size_t complete = complete_utf8_prefix(pending_);
    std::string out = to_valid_utf8(std::string_view(pending_).substr(0, complete));
    pending_.erase(0, complete);
    if (pending_.empty()) {
        // Keep the last id that decodes to something as the context of the next.
        std::size_t keep = ids_.size();
        while (keep > 0 && skip_special_ && tokenizer_->is_special(ids_[keep - 1])) {
            --keep;
        }
        ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(keep == 0 ? ids_.size() : keep - 1));
    }
    return out;
}

std::string TextStream::finish() {
    std::string out = to_valid_utf8(pending_);
    pending_.clear();
    ids_.clear();
    return out;
}

}  // namespace vkf::text
