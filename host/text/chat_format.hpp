#pragma once
// The chat formats of the ALiBi chat models: how a conversation (OpenAI's messages) becomes the
// prompt the model was fine-tuned on, and the text its turn ends with. No Vulkan.
//
// - ChatMl: MPT-7B-Chat and MPT-30B-Chat, exactly as the chat_template of mosaicml/mpt-30b-chat's
//   tokenizer_config.json renders with add_generation_prompt (what transformers' apply_chat_template
//   and servers built on it give), quirks included: a default system prompt when the conversation
//   has none, the system block closed by "\n" alone (no <|im_end|>), messages joined by "\n".
// - Baichuan: Baichuan-13B-Chat and Baichuan2-13B-Chat mark turns with token ids
//   (generation_config.json's user_token_id 195, assistant_token_id 196), built by the models' own
//   code from each message's ids: render_chat_ids.
// - Jais: Jais-13b-chat and jais-30b-chat, the prompt of their model cards
//   ("### Instruction: ... ### Input: [|Human|] ... ### Response: [|AI|]").

#include "host/text/tokenizer.hpp"

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vkf::text {

enum class ChatFormat { None, ChatMl, Baichuan, Jais };

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

// Detects from DIR/tokenizer_config.json and DIR/generation_config.json (None when unknown):
// a chat_template with ChatML's <|im_start|> and <|im_end|> is ChatMl, one with Jais's [|Human|]
// and [|AI|] is Jais; generation_config.json's user_token_id and assistant_token_id mean Baichuan;
// DIR/config.json's model_type "jais" (or architecture JAISLMHeadModel) means Jais. Missing files
// say nothing; a file that is there but not JSON throws vkf::Error naming it. Any ChatML template
// (Qwen's, OpenHermes') counts as ChatMl and is rendered MPT's way, system block included.
// A llama.cpp GGUF file's tokenizer.chat_template is read the same way (absent: None); a
// template of none of these formats throws vkf::Error quoting its start.
ChatFormat detect_chat_format(const std::filesystem::path& model_dir);

// "chatml", "baichuan", "jais", "none" (as to_string writes them); nullopt for anything else.
std::optional<ChatFormat> parse_chat_format(std::string_view name);
const char* to_string(ChatFormat format);

// The prompt text (special tokens spelled as text, the tokenizer maps them) that asks for the
// assistant's next message; throws vkf::Error naming the bad role/message: an empty conversation,
// a role other than system/user/assistant, content that is not UTF-8, a conversation of system
// messages only, a system message after the first where the format has no place for it (Jais),
// and format None. Baichuan throws too: its turn markers are token ids whose text differs between
// vocabularies (<reserved_102> in Baichuan-13B's, <reserved_106> in Baichuan2's); use
// render_chat_ids.
std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages);

// The prompt as token ids, for every format, what the model is fed:
// - ChatMl: tokenizer.encode(render_chat(...), add_special_tokens = false), as apply_chat_template
//   tokenizes a rendered template.
// - Jais: tokenizer.encode(render_chat(...)) with the post-processor, as the model card's
//   tokenizer(text) does.
// - Baichuan: the models' own build (generation_utils.py's build_chat_input for Baichuan2,
//   modeling_baichuan.py's _build_chat_input for Baichuan-13B-Chat), without their left
//   truncation to the context (the caller bounds prompt lengths): each content encoded alone with
//   tokenizer.encode(content); a user turn is 195 then its ids, an assistant turn 196 then its ids;
//   the prompt ends with 196 unless the last message is the assistant's. Which model's rules apply
//   is read from the vocabulary: id 195 spelled <reserved_106> is Baichuan2 (an optional first
//   system message as plain ids before the turns), <reserved_102> is Baichuan-13B-Chat (no system
//   role; each assistant turn closed by </s>, id 2; always ends with 196); any other spelling
//   throws vkf::Error naming it.
std::vector<TokenId> render_chat_ids(ChatFormat format, std::span<const ChatMessage> messages,
                                     const Tokenizer& tokenizer);

// Text the assistant's turn ends with in this format (added to the stop strings), e.g. "<|im_end|>".
// Empty for None.
std::vector<std::string> chat_stop_strings(ChatFormat format);

}  // namespace vkf::text
