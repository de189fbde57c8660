# cmake -DIN=file -DSYMBOL=c_identifier -DNAMESPACE=ns -DOUT=file.cpp -P EmbedText.cmake
# Writes OUT defining `extern const std::string_view NAMESPACE::SYMBOL` holding IN's bytes:
# a file served from the binary (vkf-server's page), with no build step beyond CMake's.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR count "${n} / 2")
string(REGEX REPLACE "(..)" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT}.tmp
"// Generated from ${IN}; do not edit.
#include <string_view>
namespace {
const char bytes[${count} + 1] = {
${bytes}
0};
} // namespace
namespace ${NAMESPACE} {
extern const std::string_view ${SYMBOL};
const std::string_view ${SYMBOL}{bytes, ${count}};
} // namespace ${NAMESPACE}
")
file(RENAME ${OUT}.tmp ${OUT})
