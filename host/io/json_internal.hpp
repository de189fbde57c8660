#pragma once
// What the JSON reader's files share (host/io/json.cpp: value access, json_parse.cpp:
// parsing, json_path.cpp: key paths): the document every parsed value points to. Not part
// of the API.

#include <string>

namespace vkf {

// A parsed document's source name and text, shared by its values for their messages.
struct JsonDocument {
    std::string source;
    std::string text;
};

}  // namespace vkf
