#include "host/text/post_processors.hpp"

namespace vkf::text {
namespace {

class TemplatePostProcessor final : public PostProcessor {
public:
    explicit TemplatePostProcessor(std::vector<TemplatePiece> single) : single_(std::move(single)) {}
    void process(std::vector<TokenId>& ids) const override {
        std::vector<TokenId> out;
        for (const TemplatePiece& piece : single_) {
            if (piece.is_text) {
                out.insert(out.end(), ids.begin(), ids.end());
            } else {
                out.insert(out.end(), piece.special_ids.begin(), piece.special_ids.end());
            }
        }
        ids = std::move(out);
    }

private:
    std::vector<TemplatePiece> single_;
};

class ClsSepPostProcessor final : public PostProcessor {
public:
    ClsSepPostProcessor(TokenId cls, TokenId sep) : cls_(cls), sep_(sep) {}
    void process(std::vector<TokenId>& ids) const override {
        ids.insert(ids.begin(), cls_);
        ids.push_back(sep_);
    }

private:
    TokenId cls_;
    TokenId sep_;
};

class IdentityPostProcessor final : public PostProcessor {
public:
    void process(std::vector<TokenId>& /*ids*/) const override {}
};

class SequencePostProcessor final : public PostProcessor {
public:
    explicit SequencePostProcessor(std::vector<std::unique_ptr<PostProcessor>> processors)
        : processors_(std::move(processors)) {}
    void process(std::vector<TokenId>& ids) const override {
        for (const auto& processor : processors_) {
            processor->process(ids);
        }
    }

private:
    std::vector<std::unique_ptr<PostProcessor>> processors_;
};

}  // namespace

std::unique_ptr<PostProcessor> make_template_post_processor(std::vector<TemplatePiece> single) {
    return std::make_unique<TemplatePostProcessor>(std::move(single));
}

std::unique_ptr<PostProcessor> make_cls_sep_post_processor(TokenId cls, TokenId sep) {
    return std::make_unique<ClsSepPostProcessor>(cls, sep);
}

std::unique_ptr<PostProcessor> make_identity_post_processor() {
    return std::make_unique<IdentityPostProcessor>();
}

std::unique_ptr<PostProcessor> make_sequence_post_processor(std::vector<std::unique_ptr<PostProcessor>> processors) {
    return std::make_unique<SequencePostProcessor>(std::move(processors));
}

}  // namespace vkf::text
