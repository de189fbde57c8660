#pragma once
// Post-processors: the special tokens (BOS, EOS, CLS, SEP...) put around an encoded text when
// encode is asked to add them (Hugging Face's processors). Only single texts are encoded here;
// the pair templates are not used.

#include "host/text/tokenizer.hpp"

#include <memory>
#include <vector>

namespace vkf::text {

class PostProcessor {
public:
    virtual ~PostProcessor() = default;
    // Adds the special tokens to `ids`, the encoded text.
    virtual void process(std::vector<TokenId>& ids) const = 0;
};

// One piece of a TemplateProcessing template: the text's ids, or a special token's ids.
struct TemplatePiece {
    bool is_text = false;
    std::vector<TokenId> special_ids;
};

// TemplateProcessing's single template.
std::unique_ptr<PostProcessor> make_template_post_processor(std::vector<TemplatePiece> single);
// BertProcessing and RobertaProcessing: cls, the text, sep.
std::unique_ptr<PostProcessor> make_cls_sep_post_processor(TokenId cls, TokenId sep);
// ByteLevel (it only trims offsets, which are not computed here): ids unchanged.
std::unique_ptr<PostProcessor> make_identity_post_processor();
// Sequence: each in order.
std::unique_ptr<PostProcessor> make_sequence_post_processor(std::vector<std::unique_ptr<PostProcessor>> processors);

}  // namespace vkf::text
